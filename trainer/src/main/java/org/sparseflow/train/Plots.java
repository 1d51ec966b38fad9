package org.sparseflow.train;

import java.awt.BasicStroke;
import java.awt.Color;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jfree.chart.ChartFactory;
import org.jfree.chart.ChartUtils;
import org.jfree.chart.JFreeChart;
import org.jfree.chart.axis.LogAxis;
import org.jfree.chart.axis.NumberAxis;
import org.jfree.chart.plot.PlotOrientation;
import org.jfree.chart.plot.XYPlot;
import org.jfree.chart.renderer.xy.XYLineAndShapeRenderer;
import org.jfree.data.xy.XYSeries;
import org.jfree.data.xy.XYSeriesCollection;
import org.nd4j.shade.jackson.databind.JsonNode;

/** PNG line charts (JFreeChart, headless) for run directories and {@code compare}. */
public final class Plots {

  private static final Color[] COLORS = {
    new Color(0x1f77b4), new Color(0xd62728), new Color(0x2ca02c), new Color(0xff7f0e)
  };

  static {
    System.setProperty("java.awt.headless", "true");
  }

  private Plots() {}

  /** One named series of (x, y) points. */
  public record Series(String name, List<double[]> points) {
    public Series(String name) {
      this(name, new ArrayList<>());
    }

    public Series add(double x, double y) {
      points.add(new double[] {x, y});
      return this;
    }
  }

  public static void lineChart(
      Path png, String title, String xLabel, String yLabel, List<Series> series, boolean logX)
      throws IOException {
    XYSeriesCollection data = new XYSeriesCollection();
    for (Series s : series) {
      XYSeries xy = new XYSeries(s.name(), false, true);
      for (double[] p : s.points()) {
        if (!logX || p[0] > 0) {
          xy.add(p[0], p[1]);
        }
      }
      data.addSeries(xy);
    }
    JFreeChart chart =
        ChartFactory.createXYLineChart(
            title, xLabel, yLabel, data, PlotOrientation.VERTICAL, true, false, false);
    XYPlot plot = chart.getXYPlot();
    plot.setBackgroundPaint(Color.WHITE);
    plot.setDomainGridlinePaint(Color.LIGHT_GRAY);
    plot.setRangeGridlinePaint(Color.LIGHT_GRAY);
    long distinctX =
        series.stream()
            .flatMap(x -> x.points().stream())
            .mapToDouble(p -> p[0])
            .filter(x -> !logX || x > 0)
            .distinct()
            .count();
    if (logX && distinctX >= 2) {
      LogAxis axis = new LogAxis(xLabel);
      plot.setDomainAxis(axis);
    }
    ((NumberAxis) plot.getRangeAxis()).setAutoRangeIncludesZero(false);
    XYLineAndShapeRenderer r = new XYLineAndShapeRenderer(true, false);
    for (int i = 0; i < series.size(); i++) {
      r.setSeriesPaint(i, COLORS[i % COLORS.length]);
      r.setSeriesStroke(i, new BasicStroke(2f));
      r.setSeriesShapesVisible(i, series.get(i).points().size() <= 40);
    }
    plot.setRenderer(r);
    Files.createDirectories(png.toAbsolutePath().getParent());
    // write via a temp file so a viewer never sees half a PNG
    AtomicFiles.write(png, out -> ChartUtils.writeChartAsPNG(out, chart, 900, 540));
  }

  /**
   * The standard plots of one run directory: loss vs step, and validation loss vs training FLOPs.
   */
  public static void runPlots(Path plotDir, List<JsonNode> metrics, String runLabel)
      throws IOException {
    Series train = new Series("train loss");
    Series val = new Series("validation loss");
    Series valFlops = new Series(runLabel);
    Series density = new Series("density");
    for (JsonNode m : metrics) {
      long step = m.path("step").asLong();
      if (m.has("loss")) {
        train.add(step, m.get("loss").asDouble());
      }
      if (m.has("density")) {
        density.add(step, m.get("density").asDouble());
      }
      if (m.has("val_loss")) {
        val.add(step, m.get("val_loss").asDouble());
        valFlops.add(m.path("flops").asDouble(), m.get("val_loss").asDouble());
      }
    }
    lineChart(
        plotDir.resolve("loss.png"),
        "Loss - " + runLabel,
        "step",
        "cross-entropy (nats/char)",
        List.of(train, val),
        false);
    lineChart(
        plotDir.resolve("val_loss_vs_flops.png"),
        "Validation loss vs training FLOPs",
        "training FLOPs",
        "validation loss (nats/char)",
        List.of(valFlops),
        true);
    lineChart(
        plotDir.resolve("density.png"),
        "Weight density - " + runLabel,
        "step",
        "density",
        List.of(density),
        false);
  }

  /** Validation loss vs cumulative training FLOPs for several runs (used by compare). */
  public static void compareChart(Path png, Map<String, List<JsonNode>> runs) throws IOException {
    List<Series> list = new ArrayList<>();
    for (Map.Entry<String, List<JsonNode>> e : new LinkedHashMap<>(runs).entrySet()) {
      Series s = new Series(e.getKey());
      for (JsonNode m : e.getValue()) {
        if (m.has("val_loss")) {
          s.add(m.path("flops").asDouble(), m.get("val_loss").asDouble());
        }
      }
      list.add(s);
    }
    lineChart(
        png,
        "Validation loss vs training FLOPs",
        "cumulative training FLOPs (log)",
        "validation loss (nats/char)",
        list,
        true);
  }
}
