UPDATE stage_profile SET status = 'exploded'; UPDATE sweep SET status = 'sideways';
