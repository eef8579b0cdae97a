// node:fs plus globSync(pattern, {cwd}) for Node 20: '*' matches within one path segment and
// '**' any number of segments. Enough for what the conformance runner globs; results are
// relative to cwd, like Node 22's.
import fs from 'node:fs';
import path from 'node:path';

export * from 'node:fs';
export default fs;

function toRegExp(pattern) {
  let source = '';
  for (let i = 0; i < pattern.length; i += 1) {
    const ch = pattern[i];
    if (ch === '*' && pattern[i + 1] === '*') {
      const slash = pattern[i + 2] === '/';
      source += slash ? '(?:.*/)?' : '.*';
      i += slash ? 2 : 1;
    } else if (ch === '*') {
      source += '[^/]*';
    } else if (ch === '?') {
      source += '[^/]';
    } else {
      source += ch.replace(/[.+^${}()|[\]\\]/g, '\\$&');
    }
  }
  return new RegExp(`^${source}$`);
}

export function globSync(patterns, options = {}) {
  const cwd = String(options.cwd ?? process.cwd());
  const wanted = (Array.isArray(patterns) ? patterns : [patterns]).map(toRegExp);
  const found = [];
  const visit = (relative) => {
    let entries;
    try {
      entries = fs.readdirSync(path.join(cwd, relative), { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) {
      const child = relative ? `${relative}/${entry.name}` : entry.name;
      if (wanted.some((re) => re.test(child))) found.push(child);
      if (entry.isDirectory() && entry.name !== 'node_modules' && !entry.name.startsWith('.')) visit(child);
    }
  };
  visit('');
  return found;
}
