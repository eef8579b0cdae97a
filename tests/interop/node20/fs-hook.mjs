// Module hook (registered by preload.mjs): imports of 'fs' / 'node:fs' get fs-globsync.mjs,
// which re-exports the real module and adds globSync. That module's own import is left alone.
const WITH_GLOB = new URL('./fs-globsync.mjs', import.meta.url).href;

export async function resolve(specifier, context, nextResolve) {
  if ((specifier === 'fs' || specifier === 'node:fs') && context.parentURL !== WITH_GLOB) {
    return { url: WITH_GLOB, shortCircuit: true };
  }
  return nextResolve(specifier, context);
}
