-- A patient's record in one keyset walk: Patient/$everything (src/clinical/).
--
-- Every resource in Patient X's compartment has one reference row (code `_compartment`,
-- targetType `Patient`, targetId X), src/indexing/compartment-rows.ts. The search indexes lead with
-- the resource type, so reading a whole record across types from them is one scan per type; this
-- partial index holds only those rows, ordered by (resourceType, resourceId) under each patient,
-- so a page of any size is one range scan after the cursor whatever the number of types, and the
-- condition matches the statement's literals: the plan needs no statistics.

CREATE INDEX "reference_index_patient_compartment_idx" ON "reference_index"("projectId", "targetId", "resourceType", "resourceId") WHERE "code" = '_compartment' AND "targetType" = 'Patient';

-- Patient/$everything at type level walks the project's patients by id. The primary key
-- ("resourceType", id) orders every project's patients together, so the next patient of one
-- project could be far along it; this index holds one row per Patient, by project then id.
CREATE INDEX "resource_patient_by_project_idx" ON "resource"("projectId", "id") WHERE "resourceType" = 'Patient';
