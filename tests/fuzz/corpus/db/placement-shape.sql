UPDATE placement SET shape = '-1,99999999999999999999,abc', dtype = 'f128', role = 'other';
