-- Code systems shipped without their codes (`content: not-present`: SNOMED CT, and R4's
-- CodeSystem/summary) are no longer indexed into the shared scope: held with no concepts, every
-- code was judged not in them, and a value set over them refused codes it cannot judge. Rows an
-- earlier version indexed go; they have no concepts, so only the system rows exist.

DELETE FROM "terminology_system"
WHERE "projectId" = '' AND "url" IN ('http://snomed.info/sct', 'http://hl7.org/fhir/CodeSystem/summary');
