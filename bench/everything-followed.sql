-- Resources of a followed type for Patient/$everything's referenced part, on the search benchmark's
-- data after bench/everything-compartments.sql (search-bench holds no Practitioner before), in steps:
--   psql -v step=others -f bench/everything-followed.sql: 1,000 Practitioners (prx-<n>), each the
--     performer of one Observation of a patient other than pat-1 (none referenced by pat-1's record);
--   psql -v step=record -f bench/everything-followed.sql: 1,000 more (pr-<n>), the performer of each
--     of pat-1's Observations (pr-<hash / 50 % 1000>: 19,775 reference rows, about 20 per Practitioner).
SELECT :'step' = 'others' AS others \gset
\if :others
INSERT INTO resource ("resourceType", id, "projectId", "versionId", "lastUpdated", deleted, content)
SELECT 'Practitioner', 'prx-' || g, 'search-bench', gen_random_uuid(), now(), false, json_build_object('resourceType', 'Practitioner', 'id', 'prx-' || g)
FROM generate_series(0, 999) g;
INSERT INTO reference_index ("projectId", "resourceType", "resourceId", seq, code, "targetType", "targetId", url)
SELECT 'search-bench', 'Observation', o."resourceId", 200, 'performer', 'Practitioner', 'prx-' || (row_number() OVER () - 1), NULL
FROM (SELECT "resourceId" FROM reference_index WHERE "projectId" = 'search-bench' AND code = '_compartment' AND "resourceType" = 'Observation'
        AND "targetType" = 'Patient' AND "targetId" <> 'pat-1' LIMIT 1000) o;
\else
INSERT INTO resource ("resourceType", id, "projectId", "versionId", "lastUpdated", deleted, content)
SELECT 'Practitioner', 'pr-' || g, 'search-bench', gen_random_uuid(), now(), false, json_build_object('resourceType', 'Practitioner', 'id', 'pr-' || g)
FROM generate_series(0, 999) g;
INSERT INTO reference_index ("projectId", "resourceType", "resourceId", seq, code, "targetType", "targetId", url)
SELECT 'search-bench', 'Observation', "resourceId", 201, 'performer', 'Practitioner', 'pr-' || (abs(hashtext("resourceId")) / 50) % 1000, NULL
FROM reference_index WHERE "projectId" = 'search-bench' AND code = '_compartment' AND "targetType" = 'Patient' AND "targetId" = 'pat-1';
\endif
