UPDATE resharding_task SET src_spec = 'ShardingSpec((Chunked(7),), (ShardedAxis(axis=9),))', shape = '-1,99999999999999';
