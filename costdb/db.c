/* placeholder */ int costdb_placeholder_(void); int costdb_placeholder_(void){return 0;}
