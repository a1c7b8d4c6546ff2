/**
 * Search benchmark data: Patients and Observations written straight into PostgreSQL with
 * INSERT ... SELECT generate_series, in the shapes the repository writes (resource row, content
 * with meta, and the index rows the indexer produces for these fields). History rows are not
 * written: search never reads them.
 *
 * Patients: identifier (MRN<n>), name (family from 60 surnames + a number, two given names),
 * gender, birthDate (1930-2019). Observations: subject (Patient, ~10 per patient), status, category,
 * one of 20 LOINC codes, effectiveDateTime spread over 2020-2024, valueQuantity. lastUpdated
 * advances one second per 7 resources, so many resources share a lastUpdated.
 *
 * BENCH_ROW_LAYOUT=union writes the rows of this tree's indexer, where union parameters store only
 * what no other parameter holds (src/indexing/union-rows.ts: no `name` rows for a name of family
 * and given only, no `combo-code` or `combo-value-quantity` rows); by default the layout before
 * that, with those rows, as a database written by an older server holds them.
 */
import pg from 'pg';

const UNION_LAYOUT = process.env.BENCH_ROW_LAYOUT === 'union';

export const FAMILIES = [
  'Smith', 'Johnson', 'Williams', 'Brown', 'Jones', 'Garcia', 'Miller', 'Davis', 'Rodriguez', 'Martinez',
  'Hernandez', 'Lopez', 'Gonzalez', 'Wilson', 'Anderson', 'Thomas', 'Taylor', 'Moore', 'Jackson', 'Martin',
  'Lee', 'Perez', 'Thompson', 'White', 'Harris', 'Sanchez', 'Clark', 'Ramirez', 'Lewis', 'Robinson',
  'Walker', 'Young', 'Allen', 'King', 'Wright', 'Scott', 'Torres', 'Nguyen', 'Hill', 'Flores',
  'Green', 'Adams', 'Nelson', 'Baker', 'Hall', 'Rivera', 'Campbell', 'Mitchell', 'Carter', 'Roberts',
  'Müller', 'Schmidt', 'Schneider', 'Fischer', 'Weber', 'Meyer', 'Wagner', 'Becker', 'Schulz', 'Hoffmann',
];
const GIVEN = ['Anna', 'Maria', 'John', 'James', 'Peter', 'Laura', 'Sofia', 'Lucas', 'Noah', 'Emma', 'Mia', 'Liam'];
export const LOINC = [
  '8867-4', '29463-7', '8310-5', '8302-2', '9279-1', '85354-9', '2708-6', '39156-5', '8480-6', '8462-4',
  '2339-0', '2093-3', '2571-8', '2085-9', '18262-6', '4548-4', '718-7', '6690-2', '777-3', '789-8',
];

const sqlArray = (values: string[]) => `(ARRAY[${values.map((v) => `'${v.replace(/'/g, "''")}'`).join(',')}])`;

export interface Generated {
  patients: number;
  observations: number;
  seconds: number;
}

/**
 * Writes `patients` Patients and `observations` Observations into `projectId`; `idPrefix` keeps
 * the ids of a second project apart from the first's (ids are unique per type across projects).
 */
export async function generate(databaseUrl: string, projectId: string, patients: number, observations: number, idPrefix = ''): Promise<Generated> {
  const started = performance.now();
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query(`SET synchronous_commit = off`);
    await client.query(`SET work_mem = '256MB'`);
    const batch = 100_000;
    for (let from = 1; from <= patients; from += batch) {
      await insertPatients(client, projectId, idPrefix, from, Math.min(from + batch - 1, patients));
    }
    for (let from = 1; from <= observations; from += batch) {
      await insertObservations(client, projectId, idPrefix, from, Math.min(from + batch - 1, observations), patients);
      process.stdout.write(`\r  observations ${Math.min(from + batch - 1, observations)}/${observations}`);
    }
    process.stdout.write('\n');
  } finally {
    await client.end();
  }
  return { patients, observations, seconds: Math.round((performance.now() - started) / 1000) };
}

async function insertPatients(client: pg.Client, projectId: string, idPrefix: string, from: number, to: number): Promise<void> {
  const families = sqlArray(FAMILIES);
  const given = sqlArray(GIVEN);
  await client.query(
    `CREATE TEMP TABLE gen_p AS
     SELECT g, $3::text || 'pat-' || g AS id, gen_random_uuid() AS vid,
            timestamptz '2025-01-01T00:00:00Z' + (g / 7) * interval '1 second' AS lu,
            ${families}[1 + g % ${FAMILIES.length}] || (g % 997) AS family,
            ${given}[1 + g % ${GIVEN.length}] AS given1, ${given}[1 + (g / 7) % ${GIVEN.length}] AS given2,
            CASE WHEN g % 2 = 0 THEN 'female' ELSE 'male' END AS gender,
            (date '1930-01-01' + (g * 37 % 32000))::text AS birth
     FROM generate_series($1::int, $2::int) g`,
    [from, to, idPrefix],
  );
  await client.query('BEGIN');
  await client.query(
    `INSERT INTO resource ("resourceType", id, "projectId", "versionId", "lastUpdated", deleted, content)
     SELECT 'Patient', id, $1, vid, lu, false, json_build_object(
       'resourceType', 'Patient', 'id', id,
       'meta', json_build_object('versionId', vid, 'lastUpdated', to_char(lu AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'project', $1::text),
       'identifier', json_build_array(json_build_object('system', 'http://hospital.example.org/mrn', 'value', 'MRN' || g)),
       'active', true,
       'name', json_build_array(json_build_object('family', family, 'given', json_build_array(given1, given2))),
       'gender', gender, 'birthDate', birth)
     FROM gen_p`,
    [projectId],
  );
  await client.query(
    `INSERT INTO string_index ("projectId", "resourceType", "resourceId", seq, code, value, exact)
     SELECT $1, 'Patient', id, s.seq, s.code, translate(lower(s.v), 'ü', 'u'), s.v FROM gen_p,
       LATERAL (VALUES (1, 'name', family), (2, 'name', given1), (3, 'name', given2), (4, 'family', family),
                       (5, 'given', given1), (6, 'given', given2)) AS s(seq, code, v)
     WHERE (s.seq < 3 OR given1 <> given2 OR s.seq NOT IN (3, 6)) AND NOT (${UNION_LAYOUT} AND s.code = 'name')`,
    [projectId],
  );
  await client.query(
    `INSERT INTO token_index ("projectId", "resourceType", "resourceId", seq, code, system, value, text)
     SELECT $1, 'Patient', id, s.seq, s.code, s.system, s.value, NULL FROM gen_p,
       LATERAL (VALUES (1, 'identifier', 'http://hospital.example.org/mrn', 'MRN' || g), (2, 'active', NULL, 'true'),
                       (3, 'gender', NULL, gender)) AS s(seq, code, system, value)`,
    [projectId],
  );
  await client.query(
    `INSERT INTO date_index ("projectId", "resourceType", "resourceId", seq, code, start, "end")
     SELECT $1, 'Patient', id, 1, 'birthdate', birth::date::timestamptz, birth::date::timestamptz + interval '1 day' - interval '1 millisecond'
     FROM gen_p`,
    [projectId],
  );
  await client.query('COMMIT');
  await client.query('DROP TABLE gen_p');
}

async function insertObservations(client: pg.Client, projectId: string, idPrefix: string, from: number, to: number, patients: number): Promise<void> {
  const codes = sqlArray(LOINC);
  await client.query(
    `CREATE TEMP TABLE gen_o AS
     SELECT g, $4::text || 'obs-' || g AS id, gen_random_uuid() AS vid,
            timestamptz '2025-02-01T00:00:00Z' + (g / 7) * interval '1 second' AS lu,
            $4::text || 'pat-' || (1 + (g::bigint * 7919) % $3::int) AS subject,
            ${codes}[1 + g % ${LOINC.length}] AS code,
            timestamptz '2020-01-01T00:00:00Z' + ((g::bigint * 104729) % 157766400) * interval '1 second' AS eff,
            round((40 + (g % 600) / 10.0)::numeric, 1) AS val
     FROM generate_series($1::int, $2::int) g`,
    [from, to, patients, idPrefix],
  );
  await client.query('BEGIN');
  await client.query(
    `INSERT INTO resource ("resourceType", id, "projectId", "versionId", "lastUpdated", deleted, content)
     SELECT 'Observation', id, $1, vid, lu, false, json_build_object(
       'resourceType', 'Observation', 'id', id,
       'meta', json_build_object('versionId', vid, 'lastUpdated', to_char(lu AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'project', $1::text),
       'status', 'final',
       'category', json_build_array(json_build_object('coding', json_build_array(json_build_object(
          'system', 'http://terminology.hl7.org/CodeSystem/observation-category', 'code', 'vital-signs')))),
       'code', json_build_object('coding', json_build_array(json_build_object('system', 'http://loinc.org', 'code', code))),
       'subject', json_build_object('reference', 'Patient/' || subject),
       'effectiveDateTime', to_char(eff AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
       'valueQuantity', json_build_object('value', val, 'unit', 'kg', 'system', 'http://unitsofmeasure.org', 'code', 'kg'))
     FROM gen_o`,
    [projectId],
  );
  await client.query(
    `INSERT INTO token_index ("projectId", "resourceType", "resourceId", seq, code, system, value, text)
     SELECT $1, 'Observation', id, s.seq, s.code, s.system, s.value, NULL FROM gen_o,
       LATERAL (VALUES (1, 'code', 'http://loinc.org', code), (2, 'combo-code', 'http://loinc.org', code),
                       (3, 'status', NULL, 'final'),
                       (4, 'category', 'http://terminology.hl7.org/CodeSystem/observation-category', 'vital-signs'))
         AS s(seq, code, system, value)
     WHERE NOT (${UNION_LAYOUT} AND s.code LIKE 'combo-%')`,
    [projectId],
  );
  await client.query(
    `INSERT INTO reference_index ("projectId", "resourceType", "resourceId", seq, code, "targetType", "targetId", url)
     SELECT $1, 'Observation', id, s.seq, s.code, 'Patient', subject, NULL FROM gen_o,
       LATERAL (VALUES (1, 'subject'), (2, 'patient')) AS s(seq, code)`,
    [projectId],
  );
  await client.query(
    `INSERT INTO date_index ("projectId", "resourceType", "resourceId", seq, code, start, "end")
     SELECT $1, 'Observation', id, 1, 'date', eff, eff + interval '999 milliseconds' FROM gen_o`,
    [projectId],
  );
  await client.query(
    `INSERT INTO quantity_index ("projectId", "resourceType", "resourceId", seq, code, value, system, unit)
     SELECT $1, 'Observation', id, s.seq, s.code, val, 'http://unitsofmeasure.org', 'kg' FROM gen_o,
       LATERAL (VALUES (1, 'value-quantity'), (2, 'combo-value-quantity')) AS s(seq, code)
     WHERE NOT (${UNION_LAYOUT} AND s.code LIKE 'combo-%')`,
    [projectId],
  );
  await client.query('COMMIT');
  await client.query('DROP TABLE gen_o');
}
