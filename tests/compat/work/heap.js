// heap.js - a Node program for make compat: ~400 MiB of JS objects, Maps, strings and
// typed arrays, changed, collected and summed; the output depends only on the
// arithmetic.
'use strict';
const crypto = require('crypto');
const n = Number(process.argv[2] || 800000);
const m = new Map();
for (let i = 0; i < n; i++) {
  m.set('k' + String((i * 7919) % n).padStart(7, '0'), { id: i, name: 'n'.repeat(i % 30) + i, tags: [i % 7, i % 11] });
}
for (let i = 1; i < n; i += 3) m.delete('k' + String(i).padStart(7, '0'));
const bufs = [];
for (let i = 0; i < 200; i++) { const b = new Float64Array(1 << 17); for (let j = 0; j < b.length; j += 97) b[j] = i * j; bufs.push(b); }
let sum = 0;
const h = crypto.createHash('sha256');
for (const k of [...m.keys()].sort()) { const v = m.get(k); sum += v.id + v.name.length + v.tags[0] + v.tags[1]; h.update(k); }
for (const b of bufs) sum += b[97 * 5];
console.log('entries', m.size, 'sum', sum);
console.log('sha256', h.digest('hex'));
