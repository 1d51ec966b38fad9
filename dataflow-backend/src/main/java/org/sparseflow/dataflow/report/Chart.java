package org.sparseflow.dataflow.report;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.jfree.chart.ChartFactory;
import org.jfree.chart.ChartUtils;
import org.jfree.chart.JFreeChart;
import org.jfree.chart.plot.PlotOrientation;
import org.jfree.data.category.DefaultCategoryDataset;
import org.sparseflow.dataflow.sim.SectionTiming;
import org.sparseflow.dataflow.sim.SimulationReport;

/**
 * PNG stacked bar chart: step time per target, split into forward / backward / optimizer.
 * SIMULATED.
 */
public final class Chart {
  private Chart() {}

  public static void writePng(Path file, String title, List<SimulationReport> reports) {
    List<String> labels = new ArrayList<>();
    for (SimulationReport r : reports) {
      labels.add(r.target() + " " + r.mode());
    }
    writePng(file, title, reports, labels);
  }

  /** Same, with one category label per report (labels must be distinct). */
  public static void writePng(
      Path file, String title, List<SimulationReport> reports, List<String> labels) {
    if (labels.size() != reports.size()) {
      throw new IllegalArgumentException(
          "labels (" + labels.size() + ") must match reports (" + reports.size() + ")");
    }
    System.setProperty("java.awt.headless", "true");
    DefaultCategoryDataset ds = new DefaultCategoryDataset();
    for (int i = 0; i < reports.size(); i++) {
      SimulationReport r = reports.get(i);
      double fwd = 0, bwd = 0, opt = 0;
      for (SectionTiming s : r.sections()) {
        double t = s.totalS() * s.repeats();
        switch (s.phase()) {
          case "FORWARD":
            fwd += t;
            break;
          case "BACKWARD":
            bwd += t;
            break;
          default:
            opt += t;
        }
      }
      String cat = labels.get(i);
      ds.addValue(fwd, "forward", cat);
      ds.addValue(bwd, "backward", cat);
      ds.addValue(opt, "optimizer + other", cat);
    }
    JFreeChart chart =
        ChartFactory.createStackedBarChart(
            "SIMULATED: " + title,
            "",
            "seconds per training step (one chip)",
            ds,
            PlotOrientation.HORIZONTAL,
            true,
            false,
            false);
    try {
      if (file.getParent() != null) {
        Files.createDirectories(file.getParent());
      }
      ChartUtils.saveChartAsPNG(file.toFile(), chart, 1000, 120 + 90 * reports.size());
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write chart " + file, e);
    }
  }
}
