# heap.rb - a Ruby program for make compat: ~280 MiB of objects (hashes, arrays,
# strings, a Struct), changed, collected and summed; the output depends only on the
# arithmetic.
require 'digest'

n = (ARGV[0] || 600_000).to_i
Item = Struct.new(:id, :name, :tags)
items = {}
n.times do |i|
  items["k%07d" % ((i * 7919) % n)] = Item.new(i, "n" * (i % 40) + i.to_s, [i % 7, i % 11, "t#{i % 13}"])
end
(0...n).step(3) { |i| items.delete("k%07d" % i) }
GC.start
lists = Array.new(n / 4) { |i| Array.new(8) { |j| (i * 31 + j) % 1000 } }
sum = 0
d = Digest::SHA256.new
items.keys.sort.each do |k|
  it = items[k]
  sum += it.id + it.name.size + it.tags[0] + it.tags[1]
  d << k
end
lists.each { |l| sum += l.sum }
puts "entries #{items.size} lists #{lists.size}"
puts "sum #{sum}"
puts "sha256 #{d.hexdigest}"
