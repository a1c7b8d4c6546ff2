-- Adds 400 projects of 500 Observations each (ids mp<i>-o<n>, every twentieth 8867-4, dated a minute apart in turn) to a copy of the search benchmark database, never analyzed:
--   CREATE DATABASE flint_search_many TEMPLATE flint_search_big; psql -d flint_search_many -f bench/many-projects.sql
-- For a super admin's every-project searches over many projects (bench/search-plans.ts ONLY=every).
INSERT INTO resource ("resourceType", id, "projectId", "versionId", "lastUpdated", deleted, content)
SELECT 'Observation', 'mp' || i || '-o' || g, 'many-' || i, gen_random_uuid(), timestamptz '2025-01-01' + (g * 400 + i) * interval '1 second', false,
       json_build_object('resourceType', 'Observation', 'id', 'mp' || i || '-o' || g, 'status', 'final')
FROM generate_series(1, 400) i, generate_series(1, 500) g;
INSERT INTO token_index ("projectId", "resourceType", "resourceId", seq, code, system, value, text)
SELECT 'many-' || i, 'Observation', 'mp' || i || '-o' || g, s.seq, s.code, s.system, s.value, NULL
FROM generate_series(1, 400) i, generate_series(1, 500) g,
  LATERAL (VALUES (1, 'status', NULL, 'final'), (2, 'code', 'http://loinc.org', CASE WHEN g % 20 = 0 THEN '8867-4' ELSE '2339-0' END)) AS s(seq, code, system, value);
INSERT INTO date_index ("projectId", "resourceType", "resourceId", seq, code, start, "end")
SELECT 'many-' || i, 'Observation', 'mp' || i || '-o' || g, 1, 'date', d, d + interval '999 milliseconds'
FROM generate_series(1, 400) i, generate_series(1, 500) g, LATERAL (SELECT timestamptz '2023-01-01' + (g * 400 + i) * interval '1 minute' AS d) t;
