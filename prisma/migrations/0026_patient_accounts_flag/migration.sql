-- Whether a project gives any Patient an account (meta.accounts), in one index probe: a write of a
-- resource in a patient's compartment inherits the patient's accounts (src/access/write-accounts.ts),
-- and in most projects there are none to read.
--
-- Every Patient has one `_compartment` reference row for itself (targetType `Patient`, targetId its
-- own id); its other `_compartment` rows are its accounts (src/indexing/compartment-rows.ts). This
-- partial index holds only those, so it is empty for a project without patient accounts, and the
-- condition matches the statement's literals: the plan needs no statistics.

CREATE INDEX "reference_index_patient_accounts_idx" ON "reference_index"("projectId")
  WHERE "resourceType" = 'Patient' AND "code" = '_compartment'
    AND ("targetType" IS DISTINCT FROM 'Patient' OR "targetId" IS DISTINCT FROM "resourceId");
