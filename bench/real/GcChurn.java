// GcChurn.java - the JVM workload of make realbench (bench/real/work/jvm.sh): a
// GC-heavy program written here. It keeps a live set of objects of mixed sizes (an
// array of items and a hash map of boxed keys), replaces them at random so that the
// old generation fills with garbage, and makes short-lived objects (strings, lists,
// sorted trees) on the side. Every random choice comes from seeded generators, so the
// checks it prints are the same in every run; its rates are work per second.
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Random;
import java.util.TreeMap;

public final class GcChurn {
    static final class Item {
        final long id;
        final long[] payload;
        Item next;

        Item(long id, int words) {
            this.id = id;
            this.payload = new long[words];
            for (int i = 0; i < words; i++)
                payload[i] = id * 31 + i;
        }
    }

    static long live(int n, int rounds, long[] check) {
        Random rnd = new Random(11);
        Item[] items = new Item[n];
        for (int i = 0; i < n; i++)
            items[i] = new Item(i, 4 + rnd.nextInt(40));
        long sum = 0;
        for (int r = 0; r < rounds; r++) {
            int i = rnd.nextInt(n);
            Item it = new Item((long) r * n + i, 4 + rnd.nextInt(40));
            // a short chain to an older item: pointers from new objects into old ones
            it.next = items[rnd.nextInt(n)];
            items[i] = it;
            sum += it.next.payload[0] + it.payload.length;
        }
        for (Item it : items)
            sum += it.id ^ it.payload[it.payload.length - 1];
        check[0] = sum;
        return rounds;
    }

    static long maps(int n, int rounds, long[] check) {
        Random rnd = new Random(12);
        HashMap<Long, long[]> map = new HashMap<>();
        for (long k = 0; k < n; k++)
            map.put(k * 7, new long[] { k, k * k });
        long sum = 0;
        for (int r = 0; r < rounds; r++) {
            long k = (long) rnd.nextInt(n) * 7;
            long[] v = map.get(k);
            sum += v[0];
            if ((r & 3) == 0)
                map.put(k, new long[] { v[0] + 1, v[1] });
            if ((r & 15) == 0) {
                long nk = (long) (n + rnd.nextInt(n)) * 7 + 1;
                map.put(nk, new long[] { nk, r });
                map.remove(nk);
            }
        }
        check[0] = sum + map.size();
        return rounds;
    }

    static long temps(int rounds, long[] check) {
        Random rnd = new Random(13);
        long sum = 0;
        for (int r = 0; r < rounds; r++) {
            TreeMap<String, Integer> tree = new TreeMap<>();
            ArrayList<String> list = new ArrayList<>();
            for (int i = 0; i < 2000; i++) {
                String s = "s" + rnd.nextInt(1 << 20) + "-" + i;
                tree.put(s, i);
                list.add(s);
            }
            StringBuilder sb = new StringBuilder();
            for (String s : tree.keySet())
                if (sb.length() < 4000)
                    sb.append(s).append(',');
            sum += sb.toString().hashCode() + tree.firstEntry().getValue() + list.size();
        }
        check[0] = sum;
        return (long) rounds * 2000;
    }

    public static void main(String[] args) {
        double scale = args.length > 0 ? Double.parseDouble(args[0]) : 1.0;
        String[] names = { "live", "maps", "temps" };
        double logsum = 0;
        for (String name : names) {
            long[] check = new long[1];
            long t0 = System.nanoTime();
            long work;
            switch (name) {
            case "live":
                work = live((int) (1_000_000 * scale), (int) (6_000_000 * scale), check);
                break;
            case "maps":
                work = maps((int) (2_000_000 * scale), (int) (8_000_000 * scale), check);
                break;
            default:
                work = temps((int) (1000 * scale), check);
                break;
            }
            double rate = work / ((System.nanoTime() - t0) / 1e9);
            logsum += Math.log(rate);
            System.out.printf("check: %s %d%n", name, check[0]);
            System.out.printf("%s %.1f per s%n", name, rate);
        }
        System.out.printf("jvm: %.1f (geometric mean of the rates)%n", Math.exp(logsum / names.length));
    }
}
