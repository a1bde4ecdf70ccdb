/*
 * dpnoise's JVM helper for Spark (compiled on first use by dpnoise.distributed.spark.jvm_helper_jar).
 *
 * Counts the rows of a DataFrame per key in [0, keys) into one dense array per partition, in
 * the executors' JVM, and tree-reduces the arrays: the count-table state of a local-DP
 * aggregator (Hadamard, GRR, HCMS) without a hash aggregation and without any row crossing
 * into Python. The key is column 0 of the rows, computed by Spark SQL from the report fields;
 * a null key or one outside [0, keys) (Spark SQL gives -1 to a malformed row) is counted in
 * slot `keys`. Counts are exact: int per partition, flushed into a long array before an int
 * could overflow. A partition without rows contributes nothing (no array is shipped for it), and
 * a DataFrame without rows or partitions gives all zeros.
 */
package org.dpnoise.spark;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Collections;
import java.util.Iterator;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.function.FlatMapFunction;
import org.apache.spark.api.java.function.Function2;
import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.catalyst.InternalRow;

public final class DenseCounts {
    /** The format of the helper's answers (checked by the Python side). */
    public static final int VERSION = 2;

    public int version() { return VERSION; }

    /** Counts per key of column 0 (a bigint) of rows: little-endian int64, keys + 1 of them
     *  (the last: keys out of range or null). */
    public byte[] count(RDD<InternalRow> rows, int keys, int depth) {
        return count(rows, keys, depth, Integer.MAX_VALUE);
    }

    /** As count(rows, keys, depth), the int counts flushed into longs every flushEvery rows
     *  (tests use a small value; the default keeps every int slot below 2^31). */
    public byte[] count(RDD<InternalRow> rows, int keys, int depth, int flushEvery) {
        if (keys < 1 || keys > (1 << 26)) {
            throw new IllegalArgumentException("keys must be in [1, 2^26], got " + keys);
        }
        if (flushEvery < 1) {
            throw new IllegalArgumentException("flushEvery must be >= 1, got " + flushEvery);
        }
        // treeAggregate from an empty array, not treeReduce: treeReduce of no partition (df.limit(0))
        // throws "empty collection". Beyond 32 partitions the last level is also summed on an
        // executor, so that one array (not dozens of keys + 1 longs) reaches the driver
        boolean finalOnExecutor = rows.getNumPartitions() > 32;
        long[] total = JavaRDD.fromRDD(rows, scala.reflect.ClassTag$.MODULE$.apply(InternalRow.class))
            .mapPartitions(new CountPartition(keys, flushEvery))
            .treeAggregate(new long[0], new Add(), new Add(), Math.max(1, depth), finalOnExecutor);
        if (total.length == 0) {
            total = new long[keys + 1];
        }
        ByteBuffer out = ByteBuffer.allocate(8 * total.length).order(ByteOrder.LITTLE_ENDIAN);
        for (long v : total) out.putLong(v);
        return out.array();
    }

    static final class CountPartition implements FlatMapFunction<Iterator<InternalRow>, long[]> {
        private static final long serialVersionUID = 1L;
        private final int keys;
        private final int flushEvery;

        CountPartition(int keys, int flushEvery) {
            this.keys = keys;
            this.flushEvery = flushEvery;
        }

        @Override
        public Iterator<long[]> call(Iterator<InternalRow> rows) {
            if (!rows.hasNext()) {  // no array allocated or shipped for an empty partition
                return Collections.emptyIterator();
            }
            final int k = keys;
            final int[] narrow = new int[k + 1];  // half the cache footprint of longs
            final long[] wide = new long[k + 1];
            final int every = flushEvery;
            int sinceFlush = 0;
            while (rows.hasNext()) {
                InternalRow r = rows.next();
                long key = r.isNullAt(0) ? -1L : r.getLong(0);
                narrow[(key >= 0 && key < k) ? (int) key : k]++;
                if (++sinceFlush == every) {  // by default no int slot can pass 2^31 - 1
                    flush(narrow, wide);
                    sinceFlush = 0;
                }
            }
            flush(narrow, wide);
            return Collections.singletonList(wide).iterator();
        }

        private static void flush(int[] narrow, long[] wide) {
            for (int i = 0; i < narrow.length; i++) {
                wide[i] += narrow[i];
                narrow[i] = 0;
            }
        }
    }

    /** Adds b into a; an empty array (treeAggregate's zero) is the identity. */
    static final class Add implements Function2<long[], long[], long[]> {
        private static final long serialVersionUID = 1L;

        @Override
        public long[] call(long[] a, long[] b) {
            if (a.length == 0) return b;
            if (b.length == 0) return a;
            for (int i = 0; i < a.length; i++) a[i] += b[i];
            return a;
        }
    }
}
