/** The part of whatwg-url the sandbox uses (the package ships no types). */
declare module 'whatwg-url' {
  export const URL: typeof globalThis.URL;
  export const URLSearchParams: typeof globalThis.URLSearchParams;
}
