UPDATE placement_tail SET items = '[[0,1,1]]';
