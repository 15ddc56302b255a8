"""The embedded local Kafka broker, fetched from Maven Central and run in KRaft mode."""
