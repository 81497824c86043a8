// The one error class of the package. Native code builds its errors with this class
// (lib/native.js hands it over at load), so `instanceof DockerSandboxError`, `code`,
// `details` and `cause` behave the same whichever side raised the error.
// `code` and `details` are class fields, as in the original's compiled class: they become
// own keys first (details even when undefined), then the constructor sets `name`, so the
// own keys are `code, details, name` in the original's order (Object.keys, JSON.stringify).
export class DockerSandboxError extends Error {
  code;
  details;
  constructor(message, code, details, options) {
    super(message, options);
    this.name = "DockerSandboxError";
    this.code = code;
    this.details = details;
  }
}

// TextDecoder("utf-8", { fatal: true }): invalid bytes throw the platform's TypeError.
export function decodeUtf8(bytes) {
  return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
}
