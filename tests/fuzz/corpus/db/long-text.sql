UPDATE stage_profile SET error = hex(randomblob(4000)), status = 'failed'; UPDATE sweep SET name = hex(randomblob(500)), options = hex(randomblob(2000));
