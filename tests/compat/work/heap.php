<?php
// heap.php - a PHP program for make compat: arrays and strings (~200 MiB) and the
// default extensions (json, pcre, hash, mbstring if there, ctype, date with a fixed
// time); the output depends only on the arithmetic.
$n = isset($argv[1]) ? (int)$argv[1] : 400000;
$t = [];
for ($i = 0; $i < $n; $i++) {
	$t[sprintf("k%07d", ($i * 7919) % $n)] = [$i, str_repeat("v", $i % 40) . $i, ['sq' => $i * $i]];
}
for ($i = 1; $i < $n; $i += 3) unset($t[sprintf("k%07d", $i)]);
ksort($t);
$sum = 0;
$ctx = hash_init('sha256');
foreach ($t as $k => $v) {
	$sum += $v[0] + strlen($v[1]) + $v[2]['sq'] % 1000;
	hash_update($ctx, $k);
}
$json = json_encode(array_slice($t, 0, 20000, true));
$back = json_decode($json, true);
$m = preg_match_all('/k\d{5}7/', implode(' ', array_keys($t)));
echo "entries ", count($t), " sum $sum\n";
echo "json ", strlen($json), " ", count($back), " preg $m ctype ", ctype_digit("12345") ? 1 : 0, "\n";
echo "date ", gmdate("Y-m-d H:i", 1700000000), " crc ", crc32($json), "\n";
echo "sha256 ", hash_final($ctx), "\n";
