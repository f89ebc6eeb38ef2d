// The one rule for request Content-Types the JSON routes accept, shared by every front door.
/** Whether a Content-Type is JSON (any charset) or absent. */
export function jsonContentType(type: string): boolean {
  if (type === '') return true
  const semi = type.indexOf(';')
  return (semi < 0 ? type : type.slice(0, semi)).trim().toLowerCase() === 'application/json'
}
