"""PostgreSQL + pgvector storage: ORM models, engine, units of work, migrations."""
