import type { TypedDocumentNode } from '@graphql-typed-document-node/core';
import { print } from 'graphql';

/** The OperationOutcome Flint puts in a GraphQL error's `extensions.resource`. */
export interface OperationOutcome {
  resourceType: 'OperationOutcome';
  issue: { severity: string; code: string; diagnostics?: string; expression?: string[] }[];
}

export interface GraphQLErrorEntry {
  message: string;
  path?: (string | number)[];
  extensions?: { resource?: OperationOutcome };
}

/** A GraphQL answer with errors: the data that did resolve, and each error with its OperationOutcome. */
export class FlintGraphQLError<TResult> extends Error {
  constructor(
    readonly errors: GraphQLErrorEntry[],
    readonly data: TResult | null | undefined,
  ) {
    super(errors.map((error) => error.message).join('; '));
  }

  /** The OperationOutcome of the first error that carries one. */
  get outcome(): OperationOutcome | undefined {
    return this.errors.find((error) => error.extensions?.resource)?.extensions?.resource;
  }
}

/**
 * A minimal typed client: documents generated from examples/typed-client/*.graphql carry their
 * result and variable types, so `request(PatientByIdDocument, { id })` is checked by the compiler.
 */
export class FlintGraphQLClient {
  constructor(
    private readonly fhirBaseUrl: string,
    private readonly accessToken: string,
  ) {}

  async request<TResult, TVariables extends Record<string, unknown>>(
    document: TypedDocumentNode<TResult, TVariables>,
    variables: TVariables,
  ): Promise<TResult> {
    const response = await fetch(`${this.fhirBaseUrl}/$graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${this.accessToken}` },
      body: JSON.stringify({ query: print(document), variables }),
    });
    const body = (await response.json()) as { data?: TResult | null; errors?: GraphQLErrorEntry[] };
    if (body.errors?.length) throw new FlintGraphQLError(body.errors, body.data);
    if (!body.data) throw new Error(`GraphQL answered ${response.status} without data`);
    return body.data;
  }
}
