// churn.js - the node workload of make realbench (bench/real/work/node.sh), written
// here: object churn (trees of small objects built and dropped), a Map of 1M entries
// read and rewritten at random, a JSON round trip of 100k records, and sorting of
// records by a key. Every random choice comes from a seeded generator, so the checks
// it prints are the same in every run; its rates are work per second.
'use strict';

function rng(seed) { // mulberry32
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const scale = Number(process.argv[2] || 1);

function objects() {
  const rounds = Math.round(12 * scale), n = 300000;
  let total = 0;
  for (let r = 0; r < rounds; r++) {
    const nodes = new Array(n);
    for (let i = 0; i < n; i++) nodes[i] = { val: i, kids: [], tag: 'n' + (i & 1023) };
    for (let i = 1; i < n; i++) nodes[(i - 1) >> 2].kids.push(nodes[i]);
    const stack = [nodes[0]];
    while (stack.length) {
      const x = stack.pop();
      total += (x.val & 7) + x.tag.length;
      for (const k of x.kids) stack.push(k);
    }
  }
  return [total, rounds * n];
}

function maps() {
  const rnd = rng(5), n = 1000000, rounds = Math.round(1500000 * scale);
  const m = new Map();
  for (let i = 0; i < n; i++) m.set('k' + i, { v: i, w: [i, i * 2] });
  let sum = 0;
  for (let r = 0; r < rounds; r++) {
    const k = 'k' + Math.floor(rnd() * n);
    const e = m.get(k);
    sum += e.v;
    if ((r & 3) === 0) m.set(k, { v: e.v + 1, w: [e.w[1], r] });
  }
  return [sum + m.size, rounds];
}

function json() {
  const rnd = rng(7), n = 100000, rounds = Math.round(6 * scale);
  const doc = [];
  for (let i = 0; i < n; i++) {
    const tags = [];
    for (let j = 0; j < 8; j++) tags.push(Math.floor(rnd() * 100));
    doc.push({ id: i, name: 'n' + Math.floor(rnd() * 1e6), tags, w: Math.floor(rnd() * 1e9) / 1e9 });
  }
  let len = 0, back = 0;
  for (let r = 0; r < rounds; r++) {
    const s = JSON.stringify(doc);
    len = s.length;
    back += JSON.parse(s).length;
  }
  return [len + ' ' + back, rounds * n];
}

function sort() {
  const rnd = rng(9), n = 1000000, rounds = Math.round(3 * scale);
  let first = '';
  for (let r = 0; r < rounds; r++) {
    const xs = [];
    for (let i = 0; i < n; i++) xs.push({ k: rnd(), s: 'v' + i });
    xs.sort((a, b) => a.k - b.k);
    first += xs[0].s + ' ' + xs[n >> 1].s + ' ';
  }
  return [first.trim(), rounds * n];
}

let logsum = 0;
const parts = [['objects', objects], ['maps', maps], ['json', json], ['sort', sort]];
for (const [name, f] of parts) {
  const t0 = process.hrtime.bigint();
  const [check, work] = f();
  const rate = work / (Number(process.hrtime.bigint() - t0) / 1e9);
  logsum += Math.log(rate);
  console.log(`check: ${name} ${check}`);
  console.log(`${name} ${rate.toFixed(1)} per s`);
}
console.log(`node: ${Math.exp(logsum / parts.length).toFixed(1)} (geometric mean of the rates)`);
