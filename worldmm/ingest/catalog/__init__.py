"""The session catalog port and its adapters (DynamoDB, the local object store)."""
