// RFC 7386 JSON merge patches, as the server applies them to a row's value (`patch` intents, `patchRows`), and
// the patch that undoes one. Pure functions on JSON values.

const isObject = (value) => value !== null && typeof value === 'object' && !Array.isArray(value);

/** `value` with `patch` merged in: an object patch sets what it names (null removes), anything else replaces. */
export function mergePatch(value, patch) {
  if (!isObject(patch)) return structuredClone(patch);
  const result = isObject(value) ? { ...value } : {};
  for (const [name, change] of Object.entries(patch)) {
    if (change === null) delete result[name];
    else result[name] = mergePatch(result[name] ?? null, change);
  }
  return result;
}

/** Whether two JSON values are equal (object members in any order). */
export function sameJSON(a, b) {
  if (isObject(a) && isObject(b)) {
    const keys = Object.keys(a);
    return keys.length === Object.keys(b).length && keys.every((key) => key in b && sameJSON(a[key], b[key]));
  }
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((item, i) => sameJSON(item, b[i]));
  return a === b;
}

function inversePatch(value, patch) {
  if (!isObject(patch) || !isObject(value)) return structuredClone(value);
  const inverse = {};
  for (const [name, change] of Object.entries(patch)) inverse[name] = name in value ? inversePatch(value[name], change) : null;
  return inverse;
}

/**
 * The patch that turns `mergePatch(value, patch)` back into `value`, naming only what `patch` names; null when no
 * merge patch can (a `null` member the patch changed).
 */
export function mergePatchUndoing(value, patch) {
  const inverse = inversePatch(value, patch);
  return sameJSON(mergePatch(mergePatch(value, patch), inverse), value) ? inverse : null;
}
