import Foundation

/// A line chart over time as inline SVG, for the HTML report: axes with ticks and units, a legend, a line and a dot
/// per data point for each series, dashed horizontal lines for bounds (thresholds). No script, font or image.
struct SVGChart {
    struct Line {
        var name: String
        var color: String
        /// (seconds since the start, value); nil values break the line (no sample that second).
        var points: [(x: Double, y: Double?)]
        var dashed = false
    }

    struct Bound {
        var name: String
        var value: Double
        var color: String
    }

    var title: String
    /// The y axis' label, with its unit.
    var unit: String
    var lines: [Line]
    var bounds: [Bound] = []
    /// From this time on the chart is shaded, with a label: the end of the run, after the writers stopped.
    var shadedFrom: (x: Double, label: String)?
    var width = 880.0
    var height = 280.0

    var margin = (left: 72.0, right: 20.0, top: 40.0, bottom: 44.0)

    /// Dots are drawn up to this many points per line; past it the line alone is clearer.
    static let maximumDots = 400

    /// Where things go: the axes' ranges and steps, the bounds shown, the plot's edges.
    struct Layout {
        var xMax: Double
        var xStep: Double
        var yMax: Double
        var bounds: [Bound]
        var plot: (left: Double, right: Double, top: Double, bottom: Double)

        func x(_ value: Double) -> Double { plot.left + (plot.right - plot.left) * value / xMax }
        func y(_ value: Double) -> Double { plot.bottom - (plot.bottom - plot.top) * value / yMax }
        var xTicks: [Double] { Array(stride(from: 0, through: xMax * 1.000_001, by: xStep)) }
        var yTicks: [Double] { (0...5).map { yMax * Double($0) / 5 } }
    }

    var layout: Layout {
        let xs = lines.flatMap { $0.points.map(\.x) }
        let ys = lines.flatMap { $0.points.compactMap(\.y) }
        let xMax = max(xs.max() ?? 1, shadedFrom?.x ?? 0, 1)
        let dataMax = ys.max() ?? 0
        // A bound close to the data is drawn (the axis grows to show it); one far above would flatten the lines.
        let shownBounds = bounds.filter { $0.value >= 0 && (dataMax == 0 || $0.value <= dataMax * 3) }
        let top = max(dataMax, shownBounds.map(\.value).max() ?? 0)
        return Layout(
            xMax: xMax, xStep: Self.niceCeiling(xMax / 6), yMax: top > 0 ? Self.niceCeiling(top * 1.05) : 1,
            bounds: shownBounds,
            plot: (margin.left, width - margin.right, margin.top, height - margin.bottom))
    }

    var svg: String {
        let layout = self.layout
        let (xMax, xStep, yMax, shownBounds, plot) = (
            layout.xMax, layout.xStep, layout.yMax, layout.bounds, layout.plot
        )
        func x(_ value: Double) -> Double { layout.x(value) }
        func y(_ value: Double) -> Double { layout.y(value) }
        func dash(_ line: Line) -> String { line.dashed ? " stroke-dasharray=\"6 4\"" : "" }

        var out = [
            "<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" "
                + "viewBox=\"0 0 \(Self.n(width)) \(Self.n(height))\" width=\"\(Self.n(width))\" "
                + "height=\"\(Self.n(height))\" role=\"img\" aria-label=\"\(title.htmlEscaped)\">",
            "<title>\(title.htmlEscaped)</title>",
            "<text class=\"title\" x=\"\(Self.n(plot.left))\" y=\"18\">\(title.htmlEscaped)</text>",
        ]
        // Under everything: the shaded end of the run.
        if let shadedFrom, shadedFrom.x < xMax {
            out.append(
                "<rect class=\"shade\" x=\"\(Self.n(x(shadedFrom.x)))\" y=\"\(Self.n(plot.top))\" "
                    + "width=\"\(Self.n(plot.right - x(shadedFrom.x)))\" height=\"\(Self.n(plot.bottom - plot.top))\"/>"
            )
            // Inside the shade where it fits (about 6 px a character), else against the plot's right edge.
            let fits = plot.right - x(shadedFrom.x) >= Double(shadedFrom.label.count * 6 + 8)
            out.append(
                "<text class=\"shade-label\" x=\"\(Self.n(fits ? x(shadedFrom.x) + 4 : plot.right - 4))\" "
                    + "y=\"\(Self.n(plot.top + 12))\" text-anchor=\"\(fits ? "start" : "end")\">"
                    + "\(shadedFrom.label.htmlEscaped)</text>")
        }
        // Grid and ticks.
        for tick in layout.yTicks {
            out.append(
                "<line class=\"grid\" x1=\"\(Self.n(plot.left))\" x2=\"\(Self.n(plot.right))\" y1=\"\(Self.n(y(tick)))\" "
                    + "y2=\"\(Self.n(y(tick)))\"/>")
            out.append(
                "<text class=\"tick\" x=\"\(Self.n(plot.left - 6))\" y=\"\(Self.n(y(tick) + 4))\" text-anchor=\"end\">"
                    + "\(Self.label(tick, step: yMax / 5))</text>")
        }
        for tick in layout.xTicks {
            out.append(
                "<line class=\"axis\" x1=\"\(Self.n(x(tick)))\" x2=\"\(Self.n(x(tick)))\" y1=\"\(Self.n(plot.bottom))\" "
                    + "y2=\"\(Self.n(plot.bottom + 5))\"/>")
            out.append(
                "<text class=\"tick\" x=\"\(Self.n(x(tick)))\" y=\"\(Self.n(plot.bottom + 18))\" text-anchor=\"middle\">"
                    + "\(Self.label(tick, step: xStep))</text>")
        }
        out.append(
            "<line class=\"axis\" x1=\"\(Self.n(plot.left))\" x2=\"\(Self.n(plot.right))\" y1=\"\(Self.n(plot.bottom))\" "
                + "y2=\"\(Self.n(plot.bottom))\"/>")
        out.append(
            "<line class=\"axis\" x1=\"\(Self.n(plot.left))\" x2=\"\(Self.n(plot.left))\" y1=\"\(Self.n(plot.top))\" "
                + "y2=\"\(Self.n(plot.bottom))\"/>")
        out.append(
            "<text class=\"label\" x=\"\(Self.n((plot.left + plot.right) / 2))\" y=\"\(Self.n(height - 6))\" "
                + "text-anchor=\"middle\">time since the start (s)</text>")
        out.append(
            "<text class=\"label\" transform=\"translate(16 \(Self.n((plot.top + plot.bottom) / 2))) rotate(-90)\" "
                + "text-anchor=\"middle\">\(unit.htmlEscaped)</text>")

        for bound in shownBounds {
            out.append(
                "<line class=\"bound\" stroke=\"\(bound.color)\" x1=\"\(Self.n(plot.left))\" x2=\"\(Self.n(plot.right))\" "
                    + "y1=\"\(Self.n(y(bound.value)))\" y2=\"\(Self.n(y(bound.value)))\"/>")
            out.append(
                "<text class=\"bound-label\" fill=\"\(bound.color)\" x=\"\(Self.n(plot.right - 4))\" "
                    + "y=\"\(Self.n(y(bound.value) - 4))\" text-anchor=\"end\">\(bound.name.htmlEscaped)</text>")
        }
        for line in lines {
            out.append(
                "<g class=\"series\" data-name=\"\(line.name.htmlEscaped)\" data-points=\"\(line.points.count { $0.y != nil })\">"
            )
            // A line per run of consecutive values.
            var runs: [[(Double, Double)]] = [[]]
            for point in line.points {
                if let value = point.y {
                    runs[runs.count - 1].append((x(point.x), y(value)))
                } else if !runs[runs.count - 1].isEmpty {
                    runs.append([])
                }
            }
            for run in runs where run.count > 1 {
                out.append(
                    "<polyline fill=\"none\" stroke=\"\(line.color)\" stroke-width=\"2\"\(dash(line)) "
                        + "points=\"\(run.map { "\(Self.n($0.0)),\(Self.n($0.1))" }.joined(separator: " "))\"/>")
            }
            if line.points.count <= Self.maximumDots {
                for point in line.points {
                    guard let value = point.y else { continue }
                    out.append(
                        "<circle class=\"point\" cx=\"\(Self.n(x(point.x)))\" cy=\"\(Self.n(y(value)))\" r=\"3\" "
                            + "fill=\"\(line.color)\"><title>\(line.name.htmlEscaped) at \(Self.label(point.x, step: 0.01)) s: "
                            + "\(Self.label(value, step: value / 100)) \(unit.htmlEscaped)</title></circle>")
                }
            }
            out.append("</g>")
        }
        // The legend, above the plot on the right (text about 7 px a character).
        let widths = lines.map { Double($0.name.count) * 7 + 30 }
        var legendX = plot.right - widths.reduce(0, +)
        for (line, width) in zip(lines, widths) {
            defer { legendX += width }
            out.append(
                "<g class=\"legend\"><line x1=\"\(Self.n(legendX))\" x2=\"\(Self.n(legendX + 16))\" y1=\"14\" y2=\"14\" "
                    + "stroke=\"\(line.color)\" stroke-width=\"3\"\(dash(line))/>"
                    + "<text x=\"\(Self.n(legendX + 20))\" y=\"18\">\(line.name.htmlEscaped)</text></g>")
        }
        out.append("</svg>")
        return out.joined(separator: "\n")
    }

    /// 1, 2 or 5 times a power of ten, at least `value`.
    static func niceCeiling(_ value: Double) -> Double {
        guard value > 0 else { return 1 }
        let power = pow(10, floor(log10(value)))
        for factor in [1.0, 2, 2.5, 5, 10] where factor * power >= value * 0.999_999 { return factor * power }
        return 10 * power
    }

    /// A number with the decimals its step needs, thousands grouped: `1,500`, `0.25`.
    static func label(_ value: Double, step: Double) -> String {
        let decimals = step >= 1 || step <= 0 ? 0 : min(3, Int(ceil(-log10(step))))
        let formatter = NumberFormatter()
        formatter.numberStyle = .decimal
        formatter.locale = Locale(identifier: "en_US")
        formatter.minimumFractionDigits = decimals
        formatter.maximumFractionDigits = decimals
        return formatter.string(from: NSNumber(value: value)) ?? String(value)
    }

    /// A coordinate to a tenth of a pixel.
    static func n(_ value: Double) -> String { String(format: "%.1f", value) }
}

extension String {
    /// The text for HTML and SVG: `&`, `<`, `>` and quotes escaped.
    var htmlEscaped: String {
        var out = ""
        for character in self {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.append(character)
            }
        }
        return out
    }
}
