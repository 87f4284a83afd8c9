# forkexec.sh - a shell script that forks and execs a lot: command substitution in a
# loop, pipes, subshells, background jobs, here-documents. For sh and bash alike; the
# output is the same under every malloc. Usage: sh forkexec.sh [N]
n=${1:-200}
i=0 sum=0 words=''
while [ "$i" -lt "$n" ]; do
	sq=$(expr "$i" \* "$i")
	sum=$((sum + sq))
	word=$(printf '%s\n' "w$i" | tr 'w0123456789' 'Wabcdefghij')
	words="$words $word"
	i=$((i + 1))
done
echo "squares: $sum"
echo "words: $(echo "$words" | wc -w) $(echo "$words" | cksum)"

# Pipes of several programs, and a subshell whose variables stay inside it.
seq 1 5000 | awk '{ s += $1 * 3 } END { print "awk:", s }'
seq 1 20000 | sed -n 's/7$/seven/p' | sort -r | head -n 3
(x=inside; cd /; echo "subshell: $x $(pwd)")
echo "outside: ${x-unset}"

# Background jobs, each writing its own file, then waited for.
dir=$(mktemp -d)
for j in 1 2 3 4 5 6; do
	(seq "$j" "$j" 3000 | cksum >"$dir/$j") &
done
wait
cat "$dir"/1 "$dir"/2 "$dir"/3 "$dir"/4 "$dir"/5 "$dir"/6 | cksum
rm -r "$dir"

# A here-document through a pipe of subshells.
cat <<DOC | (while read -r a b; do echo "$b:$a"; done) | (sort; echo end)
one 1
two 2
three 3
DOC

# Nested command substitutions and a function.
count() { printf '%s\n' "$@" | wc -l; }
echo "nested: $(echo "$(echo "$(count a b c d)")")"
echo "exit statuses: $(false; echo $?) $(sh -c 'exit 7'; echo $?)"
