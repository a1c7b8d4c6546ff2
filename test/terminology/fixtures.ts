import type { ProjectClient } from '../helpers/server.js';

export const SYSTEM = 'http://flint.test/CodeSystem/animals';

/** A code system four levels deep, by nesting and by `parent` properties. */
export const animals = {
  resourceType: 'CodeSystem',
  url: SYSTEM,
  name: 'Animals',
  title: 'Animals and plants',
  status: 'active',
  content: 'complete',
  hierarchyMeaning: 'is-a',
  property: [
    { code: 'color', description: 'Colour of the living thing', type: 'code' },
    { code: 'legs', description: 'Number of legs', type: 'integer' },
    { code: 'notSelectable', type: 'boolean' },
  ],
  concept: [
    {
      code: 'animal',
      display: 'Animal',
      property: [{ code: 'notSelectable', valueBoolean: true }],
      concept: [
        {
          code: 'mammal',
          display: 'Mammal',
          concept: [
            {
              code: 'dog',
              display: 'Dog',
              designation: [{ language: 'de', value: 'Hund' }],
              property: [
                { code: 'color', valueCode: 'brown' },
                { code: 'legs', valueInteger: 4 },
              ],
              concept: [{ code: 'puppy', display: 'Puppy' }],
            },
            { code: 'cat', display: 'Cat', property: [{ code: 'color', valueCode: 'black' }] },
          ],
        },
        { code: 'bird', display: 'Bird', concept: [{ code: 'parrot', display: 'Parrot', property: [{ code: 'color', valueCode: 'green' }] }] },
      ],
    },
    { code: 'plant', display: 'Plant', concept: [{ code: 'tree', display: 'Tree' }] },
    { code: 'moss', display: 'Moss', property: [{ code: 'parent', valueCode: 'plant' }] },
  ],
};

export async function withAnimals(client: ProjectClient): Promise<string> {
  const res = await client.post('/CodeSystem', animals);
  if (res.status !== 201) throw new Error(`CodeSystem not created: ${res.text}`);
  return res.body.id as string;
}

export async function withValueSet(client: ProjectClient, url: string, compose: unknown): Promise<string> {
  const res = await client.post('/ValueSet', { resourceType: 'ValueSet', url, status: 'active', compose });
  if (res.status !== 201) throw new Error(`ValueSet not created: ${res.text}`);
  return res.body.id as string;
}

export const params = (...parameter: unknown[]) => ({ resourceType: 'Parameters', parameter });

export function out(body: any, name: string): any[] {
  return (body.parameter ?? []).filter((p: any) => p.name === name);
}
