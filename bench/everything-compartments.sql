-- Compartment rows for the 1.2M data's Observations (the seed writes none); one in 50 of search-bench's goes to pat-1 instead of its subject (about 20,000).
INSERT INTO reference_index ("projectId", "resourceType", "resourceId", seq, code, "targetType", "targetId", url)
SELECT "projectId", "resourceType", "resourceId", 100, '_compartment', 'Patient',
       CASE WHEN "projectId" = 'search-bench' AND abs(hashtext("resourceId")) % 50 = 0 THEN 'pat-1' ELSE "targetId" END, NULL
FROM reference_index WHERE code = 'patient' AND "resourceType" = 'Observation';
