-- `:contains` on string parameters (issue 4). Hand-written: Prisma's schema declares neither
-- extensions nor operator classes.
--
-- `name:contains=mit` is `value LIKE '%mit%'`, which no btree serves: every string row of the
-- project and type was read (100,000 Patients: ~60 ms, 31 requests/s at 16 connections). A
-- trigram index finds the rows holding the string's trigrams (pg_trgm, a trusted extension since
-- PostgreSQL 13, so the database's owner may create it; the embedded database loads it at start,
-- src/db/pglite.ts). Strings of one or two characters have no trigram to look up: they still read
-- every row.

CREATE EXTENSION IF NOT EXISTS pg_trgm;

CREATE INDEX "string_index_value_trgm_idx" ON "string_index" USING gin ("value" gin_trgm_ops);
