"""The PostgreSQL + pgvector backend (issue 17): one schema and one role per tenant, the same
`PageWrite` in and `Hit`s out as the SQLite files. Needs the `postgres` extra (psycopg 3)."""
