package org.sparseflow.examples.data;

import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.TreeSet;

/**
 * Character-level tokenizer: one token per Unicode code point, ids assigned in code-point order so
 * that the same text always yields the same vocabulary. The vocabulary is the whole state, so
 * {@link #vocabulary()} and {@link #of(String)} round-trip it (it is stored in every run's summary
 * and checkpoint).
 */
public final class CharTokenizer {

  private final int[] codePoints;
  private final Map<Integer, Integer> idOf;

  private CharTokenizer(int[] codePoints) {
    this.codePoints = codePoints;
    this.idOf = new HashMap<>(codePoints.length * 2);
    for (int i = 0; i < codePoints.length; i++) {
      idOf.put(codePoints[i], i);
    }
  }

  /** Builds the vocabulary from every distinct code point of {@code text}. */
  public static CharTokenizer fit(String text) {
    if (text == null || text.isEmpty()) {
      throw new IllegalArgumentException(
          "text: is empty; a tokenizer needs at least one character");
    }
    TreeSet<Integer> set = new TreeSet<>();
    text.codePoints().forEach(set::add);
    return new CharTokenizer(set.stream().mapToInt(Integer::intValue).toArray());
  }

  /** Rebuilds a tokenizer from {@link #vocabulary()}: the distinct characters in id order. */
  public static CharTokenizer of(String vocabulary) {
    if (vocabulary == null || vocabulary.isEmpty()) {
      throw new IllegalArgumentException(
          "vocabulary: is empty; expected the distinct characters in id order");
    }
    int[] cps = vocabulary.codePoints().toArray();
    if (Arrays.stream(cps).distinct().count() != cps.length) {
      throw new IllegalArgumentException(
          "vocabulary: contains a repeated character; expected distinct characters");
    }
    return new CharTokenizer(cps);
  }

  public int vocabSize() {
    return codePoints.length;
  }

  /** The distinct characters in id order (the serialised form). */
  public String vocabulary() {
    return new String(codePoints, 0, codePoints.length);
  }

  public boolean canEncode(String text) {
    return text.codePoints().allMatch(idOf::containsKey);
  }

  /** Token ids of {@code text}; a character outside the vocabulary is an error naming it. */
  public int[] encode(String text) {
    int[] cps = text.codePoints().toArray();
    int[] ids = new int[cps.length];
    for (int i = 0; i < cps.length; i++) {
      Integer id = idOf.get(cps[i]);
      if (id == null) {
        throw new IllegalArgumentException(
            "text: character '"
                + new String(Character.toChars(cps[i]))
                + "' (U+"
                + String.format("%04X", cps[i])
                + ") at position "
                + i
                + " is not in the model's vocabulary of "
                + codePoints.length
                + " characters");
      }
      ids[i] = id;
    }
    return ids;
  }

  public String decode(int... ids) {
    StringBuilder sb = new StringBuilder(ids.length);
    for (int id : ids) {
      if (id < 0 || id >= codePoints.length) {
        throw new IllegalArgumentException(
            "id: " + id + " is outside the vocabulary [0, " + codePoints.length + ")");
      }
      sb.appendCodePoint(codePoints[id]);
    }
    return sb.toString();
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof CharTokenizer t && Arrays.equals(codePoints, t.codePoints);
  }

  @Override
  public int hashCode() {
    return Arrays.hashCode(codePoints);
  }

  @Override
  public String toString() {
    return "CharTokenizer{vocabSize=" + codePoints.length + "}";
  }
}
