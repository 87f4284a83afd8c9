# heap.pl - a Perl program for make compat: hashes, arrays and strings (~200 MiB),
# regular expressions, sort and pack; its output depends only on the arithmetic.
use strict;
use warnings;
use Digest::MD5 qw(md5_hex);

my $n = $ARGV[0] // 300000;
my (%h, @a);
for my $i (0 .. $n - 1) {
	my $k = sprintf("key%07d", ($i * 7919) % $n);
	$h{$k} = [$i, "v" x ($i % 50), { sq => $i * $i }];
	push @a, join(",", $i, $i * 3, $i % 17);
}
delete $h{sprintf("key%07d", $_)} for grep { $_ % 3 == 1 } 0 .. $n - 1;
my ($sum, $matches) = (0, 0);
for my $k (sort keys %h) {
	my $v = $h{$k};
	$sum += $v->[0] + length($v->[1]) + $v->[2]{sq} % 1000;
}
for (@a) { $matches++ if /^\d*5,\d*5,/ }
my $packed = pack("N*", map { $_ * 2654435761 % 4294967296 } 0 .. 100000);
print "entries ", scalar(keys %h), "\n";
print "sum $sum matches $matches\n";
print "md5 ", md5_hex($packed . join("", sort { $b cmp $a } @a[0 .. 50000])), "\n";
