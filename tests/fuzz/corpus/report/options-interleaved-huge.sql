UPDATE plan SET options = '{"schedule": "interleaved", "virtual_stages": 1000}';
