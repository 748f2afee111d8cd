// Charts drawn with the vendored uPlot from the table beside each one: the table is the source
// (readable without script, by a screen reader, offline), the chart a picture of it.
//   figure[data-chart-for=<table id>][data-chart=bars|days]
//   table: th[data-series] columns; tbody rows with data-label (bars) or data-x (days, unix seconds),
//   and td[data-value] cells in the series columns.
"use strict";
(() => {
  const PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"];
  const charts = new Map();

  const read = (table) => {
    const heads = [...table.querySelectorAll("thead th")];
    const columns = heads.map((th, i) => ({ i, name: th.dataset.series })).filter((c) => c.name);
    const rows = [...table.querySelectorAll("tbody tr")].filter((r) => r.dataset.label !== undefined || r.dataset.x !== undefined);
    // a time table lists the newest first; the chart's axis runs oldest to newest
    if (rows.every((r) => r.dataset.x !== undefined)) rows.sort((a, b) => Number(a.dataset.x) - Number(b.dataset.x));
    const labels = rows.map((r) => r.dataset.label || "");
    const xs = rows.map((r, i) => (r.dataset.x !== undefined ? Number(r.dataset.x) : i));
    const series = columns.map((c) => ({
      name: c.name,
      values: rows.map((r) => { const cell = r.children[c.i]; return cell && cell.dataset.value !== undefined ? Number(cell.dataset.value) : null; }),
    }));
    return { labels, xs, series };
  };

  const colours = () => {
    const css = getComputedStyle(document.documentElement);
    return { ink: css.getPropertyValue("--muted").trim() || "#555", grid: css.getPropertyValue("--line").trim() || "#ddd" };
  };

  const options = (figure, data, kind) => {
    const { ink, grid } = colours();
    const axis = { stroke: ink, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid, width: 1 } };
    const bars = kind === "bars";
    const x = bars
      ? { ...axis, values: (u, ticks) => ticks.map((t) => data.labels[t] || ""), rotate: 0, size: 40, gap: 4 }
      : { ...axis };
    return {
      width: Math.max(240, figure.clientWidth),
      height: 240,
      legend: { show: !bars },
      cursor: { drag: { x: false, y: false }, points: { show: !bars } },
      scales: { x: bars ? { time: false, range: [-0.5, data.labels.length - 0.5] } : { time: true },
                y: bars ? { range: [0, 100] } : { range: (u, min, max) => [0, Math.max(1, max)] } },
      axes: [bars ? { ...x, splits: () => data.xs } : x, { ...axis, size: 56 }],
      series: [{}, ...data.series.map((s, i) => ({
        label: s.name,
        stroke: PALETTE[i % PALETTE.length],
        fill: bars ? PALETTE[i % PALETTE.length] + "cc" : undefined,
        width: bars ? 0 : 2,
        points: { show: !bars, size: 5 },
        paths: bars ? window.uPlot.paths.bars({ size: [0.6, 64] }) : undefined,
      }))],
    };
  };

  const draw = (figure) => {
    const table = document.getElementById(figure.dataset.chartFor);
    if (!table || !window.uPlot) return;
    const data = read(table);
    if (!data.xs.length) return;
    const old = charts.get(figure);
    if (old) old.destroy();
    figure.querySelectorAll(".uplot").forEach((n) => n.remove());
    const chart = new window.uPlot(options(figure, data, figure.dataset.chart), [data.xs, ...data.series.map((s) => s.values)], figure);
    charts.set(figure, chart);
  };

  const drawAll = () => {
    for (const [figure, chart] of charts) if (!figure.isConnected) { chart.destroy(); charts.delete(figure); }
    document.querySelectorAll("figure[data-chart-for]").forEach(draw);
  };

  let pending = null;
  addEventListener("resize", () => { clearTimeout(pending); pending = setTimeout(drawAll, 150); });
  document.addEventListener("bw:refreshed", drawAll);
  document.addEventListener("DOMContentLoaded", drawAll);
})();
