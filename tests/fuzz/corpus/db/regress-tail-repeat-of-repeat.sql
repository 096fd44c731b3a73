UPDATE placement_tail SET items = '[3,0,0,0,2,1,-1,1,-1]';
