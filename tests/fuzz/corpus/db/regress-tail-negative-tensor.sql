UPDATE placement_tail SET items = '[1,0,0,-5,1]';
