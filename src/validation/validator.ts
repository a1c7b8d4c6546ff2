import { isResourceType } from '../fhir/definitions.js';
import { issue, OperationOutcomeError, outcome } from '../fhir/outcome.js';
import { isRecord, type OperationOutcomeIssue, type Resource } from '../fhir/types.js';
import {
  getTypeModel,
  resolveModel,
  type ElementModel,
  type RequiredCodes,
  type Slot,
  type TypeModel,
} from './model.js';
import { unstorableTextProblem, type PrimitiveType } from './primitives.js';
import { InvariantScope } from './invariants/scope.js';

/**
 * Validation of FHIR R4 JSON against the base StructureDefinitions, in one walk over the resource.
 * It checks what a StructureDefinition says about shape (elements, JSON types, arrays,
 * cardinality, primitive formats, choice types, nested resources), checks `code` elements against
 * their required bindings when the value set expands from the definitions, and checks the
 * definitions' invariants on each value it has walked (invariants/). It does not check other
 * terminology bindings, profiles in meta.profile, or whether references resolve.
 */

export interface ValidateOptions {
  /** The resource type named by the URL; the body's resourceType must match it. */
  expectedType?: string;
  /** This server's FHIR base: references to it by absolute URL must name a resource as relative ones do. */
  fhirBase?: string;
}

export interface CollectOptions extends ValidateOptions {
  /** Also report invariants of severity warning (best practice), as `$validate` does. */
  warnings?: boolean;
}

/** Nesting limit of objects: beyond any real resource, well below what would exhaust the stack. */
const MAX_DEPTH = 100;
/** Issues listed in one outcome; a hostile body could otherwise produce millions. */
const MAX_ISSUES = 100;
const MAX_SHOWN_LENGTH = 60;
/** Allowed codes listed in a message; resource-types has over 150. */
const MAX_SHOWN_CODES = 12;

/** Throws a 400 OperationOutcome listing every error: structure, bindings of codes, invariants. */
export function validateResource(resource: unknown, options?: ValidateOptions): asserts resource is Resource {
  const walk = new Walk(false, options?.fhirBase);
  walk.validateRoot(resource, options?.expectedType);
  const issues = walk.finish();
  if (issues.length > 0) throw new OperationOutcomeError(outcome(issues), 400);
}

/**
 * Every issue the walk finds, each with its severity, without throwing: errors, and with
 * `warnings` the best-practice invariants too. [] when the resource is valid.
 */
export function collectValidationIssues(resource: unknown, options?: CollectOptions): OperationOutcomeIssue[] {
  const walk = new Walk(options?.warnings ?? false, options?.fhirBase);
  walk.validateRoot(resource, options?.expectedType);
  return walk.finish();
}

type Segment = string | number;

class Walk {
  private readonly issues: OperationOutcomeIssue[] = [];
  /** Kept apart: they are listed only when the shape is right, as they mean little on a malformed resource. */
  private readonly invariantIssues: OperationOutcomeIssue[] = [];
  private invariantsOmitted = 0;
  private readonly path: Segment[] = [];
  private depth = 0;
  private omitted = 0;
  private readonly invariants: InvariantScope;
  private readonly whereNow = (): string => this.where();

  constructor(warnings: boolean, fhirBase: string | undefined) {
    this.invariants = new InvariantScope(warnings, (severity, text, where, code) => this.reportInvariant(severity, text, where, code), fhirBase);
  }

  validateRoot(value: unknown, expectedType: string | undefined): void {
    if (!isRecord(value)) {
      this.report('structure', `The body must be a JSON object with a resourceType, got ${describe(value)}`, false);
      return;
    }
    const type = this.checkResourceType(value, expectedType);
    if (type === undefined) return;
    this.path.push(type);
    this.validateResourceObject(value, type, false);
  }

  private validateResourceObject(value: Record<string, unknown>, type: string, contained: boolean): void {
    const model = getTypeModel(type) as TypeModel;
    this.invariants.enterResource(value, type, this.where(), contained);
    this.validateObject(value, model);
    this.invariants.leaveResource();
  }

  finish(): OperationOutcomeIssue[] {
    if (this.issues.length === 0) {
      this.issues.push(...this.invariantIssues);
      this.omitted += this.invariantsOmitted;
    }
    if (this.omitted > 0) {
      this.issues.push(issue('too-costly', `${this.omitted} more problems were found and not listed; fix the ones above first`));
    }
    return this.issues;
  }

  /** Checks resourceType and returns it when it names a concrete resource type. */
  private checkResourceType(value: Record<string, unknown>, expectedType?: string): string | undefined {
    const type = value.resourceType;
    this.path.push('resourceType');
    if (typeof type !== 'string') {
      const got = type === undefined ? 'it is missing' : `got ${describe(type)}`;
      this.report('structure', `Missing resourceType at ${this.where()}: a resource needs a resourceType string, ${got}`);
    } else if (!isResourceType(type)) {
      this.report(
        'structure',
        `Unknown resource type ${quote(type)} at ${this.where()}: use a concrete FHIR R4 resource type ` +
          '(abstract types such as Resource and DomainResource are not allowed)',
      );
    }
    if (typeof type === 'string' && expectedType !== undefined && type !== expectedType) {
      this.report(
        'invalid',
        `Resource type ${quote(type)} at ${this.where()} does not match the URL type ${quote(expectedType)}: ` +
          "the body's resourceType must match the type in the URL",
      );
    }
    this.path.pop();
    return typeof type === 'string' && isResourceType(type) ? type : undefined;
  }

  private validateNestedResource(value: unknown, contained: boolean): void {
    if (!isRecord(value)) {
      this.wrongType(value, 'a resource (JSON object with a resourceType)');
      return;
    }
    const type = this.checkResourceType(value);
    if (type !== undefined) this.validateResourceObject(value, type, contained);
  }

  private validateObject(value: Record<string, unknown>, model: TypeModel): void {
    if (this.depth >= MAX_DEPTH) {
      this.report('structure', `Too deeply nested at ${this.where()}: at most ${MAX_DEPTH} levels of objects are accepted`);
      return;
    }
    this.depth++;
    let count = 0;
    let choices: Map<ElementModel, string> | undefined;
    for (const key in value) {
      count++;
      const slot = model.slots.get(key);
      if (slot === undefined) {
        if (key !== 'resourceType' || !model.isResource) this.unknownElement(key, model);
        continue;
      }
      if (slot.element.isChoice) {
        choices ??= new Map();
        this.checkSingleChoice(slot.element, key, choices);
      }
      this.path.push(slot.isPrimitiveExtension ? key.slice(1) : key);
      this.validateProperty(value, key, slot);
      this.path.pop();
    }
    if (count === 0) this.report('structure', `Empty object at ${this.where()}: FHIR JSON does not allow empty objects; remove it`);
    else this.checkRequired(value, model);
    this.depth--;
  }

  private checkSingleChoice(element: ElementModel, key: string, seen: Map<ElementModel, string>): void {
    const property = key.charCodeAt(0) === 95 /* _ */ ? key.slice(1) : key;
    const previous = seen.get(element);
    if (previous === undefined) seen.set(element, property);
    else if (previous !== property) {
      this.path.push(property);
      this.report(
        'invalid',
        `Several values for ${element.path} at ${this.where()}: ${previous} and ${property} are both present; keep only one`,
      );
      this.path.pop();
    }
  }

  private checkRequired(value: Record<string, unknown>, model: TypeModel): void {
    for (const element of model.required) {
      if (element.keys.some((key) => value[key] !== undefined)) continue;
      this.path.push(element.isChoice ? `${element.name}[x]` : element.name);
      this.report(
        'required',
        `Missing required element at ${this.where()}: ${element.path} is ${cardinality(element)}; add it`,
      );
      this.path.pop();
    }
  }

  private unknownElement(key: string, model: TypeModel): void {
    this.path.push(shorten(key));
    const at = this.where();
    const property = key.charCodeAt(0) === 95 /* _ */ ? key.slice(1) : key;
    const choice = model.choices.find((element) => isChoiceAttempt(property, element.name));
    if (choice) {
      const allowed = choice.keys.filter((name) => !name.startsWith('_')).join(', ');
      this.report('structure', `Invalid type for ${choice.path} at ${at}: ${quote(key)} is not allowed; use one of ${allowed}`);
    } else if (key !== property && model.slots.has(property)) {
      this.report('structure', `Unexpected ${quote(key)} at ${at}: only primitive elements have a "_" sibling; remove it`);
    } else {
      this.report('structure', `Unknown element ${quote(key)} at ${at}: ${model.name} has no such element; remove it or fix its name`);
    }
    this.path.pop();
  }

  private validateProperty(owner: Record<string, unknown>, key: string, slot: Slot): void {
    const value = owner[key];
    const { element } = slot;
    if (value === null) {
      this.report('structure', `Null at ${this.where()}: FHIR JSON does not allow null values; remove the element`);
    } else if (!element.isArray) {
      if (Array.isArray(value)) {
        const rule = `${element.path} is ${cardinality(element)}`;
        this.report('structure', `Array at ${this.where()}: ${rule}, so give a single value instead of an array`);
      } else if (slot.isPrimitiveExtension) this.validatePrimitiveElement(value, key, owner[key.slice(1)] !== undefined);
      else this.validateValue(value, slot);
    } else if (!Array.isArray(value)) {
      const rule = `${element.path} repeats (${cardinality(element)})`;
      this.report('structure', `Not an array at ${this.where()}: ${rule}, so its value must be a JSON array, got ${describe(value)}`);
    } else if (value.length === 0) {
      this.report('structure', `Empty array at ${this.where()}: FHIR JSON does not allow empty arrays; remove the element`);
    } else {
      this.checkCardinality(value.length, element);
      this.validateItems(value, owner, key, slot);
    }
  }

  private checkCardinality(count: number, element: ElementModel): void {
    if (count > element.max) {
      this.report('invalid', `Too many values at ${this.where()}: ${element.path} allows at most ${element.max}, got ${count}`);
    } else if (count < element.min) {
      this.report('required', `Too few values at ${this.where()}: ${element.path} needs at least ${element.min}, got ${count}`);
    }
  }

  private validateItems(items: unknown[], owner: Record<string, unknown>, key: string, slot: Slot): void {
    // A repeating primitive and its `_name` sibling are aligned arrays: null fills the gaps.
    const sibling = slot.type.primitive ? owner[slot.isPrimitiveExtension ? key.slice(1) : `_${key}`] : undefined;
    if (slot.isPrimitiveExtension && Array.isArray(sibling) && sibling.length !== items.length) {
      const counts = `it has ${items.length} items but ${quote(key.slice(1))} has ${sibling.length}`;
      this.report('structure', `Misaligned ${quote(key)} at ${this.where()}: ${counts}; both arrays must have the same length`);
    }
    for (let index = 0; index < items.length; index++) {
      const item = items[index];
      this.path.push(index);
      if (item === null) {
        if (!Array.isArray(sibling) || sibling[index] === null || sibling[index] === undefined) {
          const rule = 'FHIR JSON only allows null in a primitive array to line up with a value in its "_" sibling';
          this.report('structure', `Null at ${this.where()}: ${rule}; remove it`);
        }
      } else if (slot.isPrimitiveExtension) {
        this.validatePrimitiveElement(item, key, Array.isArray(sibling) && sibling[index] !== null && sibling[index] !== undefined);
      } else this.validateValue(item, slot);
      this.path.pop();
    }
  }

  /** The `_name` object of a primitive: only id and extension. */
  private validatePrimitiveElement(value: unknown, key: string, hasValue: boolean): void {
    if (!isRecord(value)) {
      const expected = `${quote(key)} must hold an object with id and/or extension`;
      this.report('structure', `Wrong JSON type at ${this.where()}: ${expected}, got ${describe(value)}`);
      return;
    }
    this.validateObject(value, getTypeModel('Element') as TypeModel);
    this.invariants.checkPrimitiveElement(value, hasValue, this.whereNow);
  }

  private validateValue(value: unknown, slot: Slot): void {
    const { type, element } = slot;
    if (type.primitive) {
      if (!this.validatePrimitive(value, type.primitive)) return;
      if (element.binding) this.checkCode(value as string, element.binding);
      this.invariants.checkPrimitive(value, element, type, this.whereNow);
    } else if (type.isResource) {
      this.validateNestedResource(value, element.name === 'contained');
    } else if (!isRecord(value)) {
      this.wrongType(value, `an object (${type.code})`);
    } else {
      const model = resolveModel(type);
      // Without a definition for the type there is nothing to check it against.
      if (!model) return;
      this.validateObject(value, model);
      this.invariants.checkObject(value, element, model, this.whereNow);
    }
  }

  /** Reports a value that is not valid for the primitive type; true when it is valid. */
  private validatePrimitive(value: unknown, type: PrimitiveType): boolean {
    if (typeof value !== type.json) {
      this.wrongType(value, `${jsonKindText(type.json)} (${type.code})`);
      return false;
    }
    if (value === '') {
      const rule = 'FHIR JSON does not allow empty strings';
      this.report('value', `Empty string at ${this.where()}: ${rule}; remove the element or give it a value`);
      return false;
    }
    const unstorable = typeof value === 'string' ? unstorableTextProblem(value) : undefined;
    if (unstorable !== undefined) {
      this.report('value', `Invalid ${type.code} at ${this.where()}: ${unstorable}; remove it`);
      return false;
    }
    const problem = type.check(value as never);
    if (problem === undefined) return true;
    const reason = problem === 'bad format' ? '' : `${problem}; `;
    this.report('value', `Invalid ${type.code} ${describe(value)} at ${this.where()}: ${reason}expected ${type.expected}`);
    return false;
  }

  private checkCode(code: string, binding: RequiredCodes): void {
    if (binding.codes.has(code)) return;
    const shown = [...binding.codes].slice(0, MAX_SHOWN_CODES).join(', ');
    const more = binding.codes.size > MAX_SHOWN_CODES ? `, … (${binding.codes.size} codes)` : '';
    this.report(
      'code-invalid',
      `Invalid code ${quote(code)} at ${this.where()}: it is not in the value set ${binding.valueSet}, ` +
        `which this element requires; use one of ${shown}${more}`,
    );
  }

  private wrongType(value: unknown, expected: string): void {
    this.report('structure', `Wrong JSON type at ${this.where()}: expected ${expected}, got ${describe(value)}`);
  }

  private report(code: OperationOutcomeIssue['code'], text: string, withExpression = true): void {
    if (this.issues.length >= MAX_ISSUES) {
      this.omitted++;
      return;
    }
    this.issues.push(issue(code, text, withExpression ? this.where() : undefined));
  }

  private reportInvariant(
    severity: OperationOutcomeIssue['severity'],
    text: string,
    where: string,
    code: OperationOutcomeIssue['code'] = 'invariant',
  ): void {
    if (this.invariantIssues.length >= MAX_ISSUES) {
      this.invariantsOmitted++;
      return;
    }
    const found = issue(code, text, where);
    found.severity = severity;
    this.invariantIssues.push(found);
  }

  /** The FHIRPath-like location of the current element: Patient.name[0].given[1]. */
  private where(): string {
    let text = '';
    for (const segment of this.path) {
      if (typeof segment === 'number') text += `[${segment}]`;
      else text += text === '' ? segment : `.${segment}`;
    }
    return text;
  }
}

/** valueFoo on an element value[x]: the right element with a type suffix it does not allow. */
function isChoiceAttempt(key: string, name: string): boolean {
  if (key.length <= name.length || !key.startsWith(name)) return false;
  const next = key.charCodeAt(name.length);
  return next >= 65 && next <= 90;
}

function cardinality(element: ElementModel): string {
  return `${element.min}..${element.max === Infinity ? '*' : element.max}`;
}

function jsonKindText(kind: string): string {
  return kind === 'number' ? 'a JSON number' : kind === 'boolean' ? 'a JSON boolean' : 'a JSON string';
}

function shorten(text: string): string {
  return text.length > MAX_SHOWN_LENGTH ? `${text.slice(0, MAX_SHOWN_LENGTH)}…` : text;
}

function quote(text: string): string {
  return `"${shorten(text)}"`;
}

/** A short description of a JSON value for messages; never serialises whole objects. */
function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  switch (typeof value) {
    case 'string':
      return quote(value);
    case 'number':
    case 'boolean':
      return String(value);
    case 'object':
      return 'an object';
    default:
      return `a ${typeof value} (not JSON)`;
  }
}
