UPDATE plan SET options = '{"schedule": "interleaved", "virtual_stages": 2}', micro_batches = 6;
