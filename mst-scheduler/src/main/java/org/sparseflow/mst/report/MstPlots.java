package org.sparseflow.mst.report;

import java.awt.Color;
import java.awt.Paint;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.jfree.chart.ChartUtils;
import org.jfree.chart.JFreeChart;
import org.jfree.chart.axis.NumberAxis;
import org.jfree.chart.axis.SymbolAxis;
import org.jfree.chart.plot.XYPlot;
import org.jfree.chart.renderer.GrayPaintScale;
import org.jfree.chart.renderer.LookupPaintScale;
import org.jfree.chart.renderer.xy.XYBlockRenderer;
import org.jfree.chart.renderer.xy.XYLineAndShapeRenderer;
import org.jfree.chart.title.PaintScaleLegend;
import org.jfree.chart.ui.RectangleEdge;
import org.jfree.data.xy.DefaultXYZDataset;
import org.jfree.data.xy.XYSeries;
import org.jfree.data.xy.XYSeriesCollection;
import org.sparseflow.mst.core.SparsitySchedule;
import org.sparseflow.mst.core.UpdateRecord;

/**
 * PNG charts (JFreeChart): sparsity schedule, per-layer density heat map, validation loss vs
 * training FLOPs.
 */
public final class MstPlots {

  private MstPlots() {}

  static {
    System.setProperty("java.awt.headless", "true");
  }

  /**
   * Target sparsity of the schedule per step, and the measured global sparsity at each topology
   * update.
   */
  public static void sparsitySchedule(
      SparsitySchedule schedule, List<UpdateRecord> records, Path png) throws IOException {
    XYSeries target = new XYSeries("target sparsity (schedule)");
    long total = schedule.getTotalSteps();
    for (long t = 0; t < total; t += Math.max(1, total / 400)) {
      target.add(t, schedule.sparsityAt(t));
    }
    XYSeries actual = new XYSeries("measured global sparsity");
    for (UpdateRecord r : records) {
      actual.add(r.step, 1.0 - r.globalDensity);
    }
    XYSeriesCollection ds = new XYSeriesCollection();
    ds.addSeries(target);
    ds.addSeries(actual);
    XYLineAndShapeRenderer rend = new XYLineAndShapeRenderer();
    rend.setSeriesShapesVisible(0, false);
    rend.setSeriesLinesVisible(1, false);
    XYPlot plot = new XYPlot(ds, new NumberAxis("step"), new NumberAxis("sparsity"), rend);
    save(new JFreeChart("MST sparsity schedule", plot), png);
  }

  /** Heat map: x = update step, y = layer, colour = density (dark = dense). */
  public static void densityHeatMap(List<UpdateRecord> records, Path png) throws IOException {
    if (records.isEmpty()) {
      return;
    }
    List<String> layers = new ArrayList<>(records.get(0).layerDensity.keySet());
    int n = records.size() * layers.size();
    double[][] xyz = new double[3][n];
    int k = 0;
    double width = records.size() > 1 ? records.get(1).step - records.get(0).step : 1;
    for (UpdateRecord r : records) {
      for (int i = 0; i < layers.size(); i++) {
        xyz[0][k] = r.step;
        xyz[1][k] = i;
        xyz[2][k] = r.layerDensity.getOrDefault(layers.get(i), Double.NaN);
        k++;
      }
    }
    DefaultXYZDataset ds = new DefaultXYZDataset();
    ds.addSeries("density", xyz);
    XYBlockRenderer rend = new XYBlockRenderer();
    rend.setBlockWidth(width);
    GrayPaintScale scale = new GrayPaintScale(0.0, 1.0);
    rend.setPaintScale(
        new LookupPaintScale(0, 1, Color.WHITE) {
          @Override
          public Paint getPaint(double v) {
            return scale.getPaint(1.0 - v);
          }
        });
    SymbolAxis y = new SymbolAxis("layer", layers.toArray(new String[0]));
    XYPlot plot = new XYPlot(ds, new NumberAxis("step"), y, rend);
    JFreeChart chart = new JFreeChart("Per-layer density over time", plot);
    chart.removeLegend();
    NumberAxis legendAxis = new NumberAxis("density (white 0 .. black 1)");
    legendAxis.setRange(0, 1);
    PaintScaleLegend legend =
        new PaintScaleLegend(
            new GrayPaintScale(0, 1) {
              @Override
              public Paint getPaint(double v) {
                return super.getPaint(1.0 - v);
              }
            },
            legendAxis);
    legend.setPosition(RectangleEdge.RIGHT);
    chart.addSubtitle(legend);
    save(chart, png, 1000, Math.max(400, 24 * layers.size() + 150));
  }

  /**
   * Validation loss against cumulative training FLOPs, one series per run: name -> [[flops...],
   * [loss...]].
   */
  public static void lossVsFlops(Map<String, double[][]> runs, Path png) throws IOException {
    XYSeriesCollection ds = new XYSeriesCollection();
    for (Map.Entry<String, double[][]> e : runs.entrySet()) {
      XYSeries s = new XYSeries(e.getKey());
      for (int i = 0; i < e.getValue()[0].length; i++) {
        s.add(e.getValue()[0][i], e.getValue()[1][i]);
      }
      ds.addSeries(s);
    }
    XYLineAndShapeRenderer rend = new XYLineAndShapeRenderer(true, true);
    NumberAxis y = new NumberAxis("validation loss");
    y.setAutoRangeIncludesZero(false);
    XYPlot plot = new XYPlot(ds, new NumberAxis("cumulative training FLOPs (counted)"), y, rend);
    save(new JFreeChart("Validation loss vs training FLOPs", plot), png);
  }

  private static void save(JFreeChart c, Path png) throws IOException {
    save(c, png, 900, 500);
  }

  private static void save(JFreeChart c, Path png, int w, int h) throws IOException {
    if (png.toAbsolutePath().getParent() != null) {
      Files.createDirectories(png.toAbsolutePath().getParent());
    }
    ChartUtils.saveChartAsPNG(png.toFile(), c, w, h);
  }
}
