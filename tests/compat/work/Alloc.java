// Alloc.java - an allocation-heavy Java program for make compat: ~600 MiB of live
// objects (a HashMap of records, linked lists, arrays) in a 1 GiB heap, churned by the
// collector; its output depends only on the arithmetic.
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

public class Alloc {
	record Item(int id, String name, long[] vals) {}

	public static void main(String[] args) throws Exception {
		int n = args.length > 0 ? Integer.parseInt(args[0]) : 600000;
		Map<String, Item> m = new HashMap<>();
		for (int i = 0; i < n; i++) {
			long[] v = new long[8 + i % 16];
			for (int j = 0; j < v.length; j++)
				v[j] = (long) i * j;
			m.put(String.format("k%07d", (int) (((long) i * 7919) % n)), new Item(i, "n" + i, v));
		}
		for (int i = 1; i < n; i += 3)
			m.remove(String.format("k%07d", i));
		List<LinkedList<Integer>> lists = new ArrayList<>();
		for (int i = 0; i < 2000; i++) {
			LinkedList<Integer> l = new LinkedList<>();
			for (int j = 0; j < 500; j++)
				l.add(i * j);
			lists.add(l);
		}
		long churn = 0;
		for (int r = 0; r < 40; r++) {
			byte[][] junk = new byte[200][];
			for (int k = 0; k < junk.length; k++) {
				junk[k] = new byte[64 * 1024];
				junk[k][k] = (byte) r;
				churn += junk[k][k];
			}
		}
		long sum = 0;
		MessageDigest d = MessageDigest.getInstance("SHA-256");
		for (Map.Entry<String, Item> e : new TreeMap<>(m).entrySet()) {
			Item it = e.getValue();
			sum += it.id() + it.name().length() + it.vals()[it.vals().length - 1];
			d.update(e.getKey().getBytes());
		}
		for (LinkedList<Integer> l : lists)
			sum += l.getLast();
		StringBuilder hex = new StringBuilder();
		for (byte b : d.digest())
			hex.append(String.format("%02x", b));
		System.out.println("entries " + m.size() + " sum " + sum + " churn " + churn);
		System.out.println("sha256 " + hex);
	}
}
