"""The archive of the requests log: Parquet files per partition and offset range, with a
manifest per partition (docs/guides/retention.md), and the retention it allows."""
