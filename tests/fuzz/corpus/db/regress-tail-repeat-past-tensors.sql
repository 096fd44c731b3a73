UPDATE placement_tail SET items = '[4294967296,0,0,0,2,4294967295,-1]';
