/// A chart drawn into a picture, for the PNG report: the same layout as its SVG, with text in `BitmapFont` at twice
/// its size (so the margins are wider, the legend has a row of its own, and the unit sits above the y axis instead
/// of along it).
extension SVGChart {
    /// The chart's margins for pixel text.
    static let rasterMargin = (left: 96.0, right: 24.0, top: 76.0, bottom: 52.0)

    /// Draws the chart with its top left corner at (`left`, `top`).
    func draw(into image: inout RasterImage, left: Int, top: Int) {
        var chart = self
        chart.margin = Self.rasterMargin
        var layout = chart.layout
        layout.plot.left += Double(left)
        layout.plot.right += Double(left)
        let plot = layout.plot
        let offset = Double(top)
        func point(_ x: Double, _ y: Double) -> (Double, Double) { (layout.x(x), offset + layout.y(y)) }
        let ink = RasterImage.Color(hex: "#1d1d1f")
        let gray = RasterImage.Color(hex: "#555555")
        let axis = RasterImage.Color(hex: "#888888")

        if let shadedFrom, shadedFrom.x < layout.xMax {
            let left = Int(layout.x(shadedFrom.x))
            image.fill(
                x: left, y: top + Int(plot.top), width: Int(plot.right) - left, height: Int(plot.bottom - plot.top),
                RasterImage.Color(hex: "#f0f0f0"))
            // Inside the shade where it fits, else against the plot's right edge.
            let fits = plot.right - Double(left) >= Double(RasterImage.textWidth(shadedFrom.label, scale: 2) + 12)
            image.text(
                shadedFrom.label, x: fits ? Double(left + 6) : plot.right - 4, y: offset + plot.top + 6, gray,
                scale: 2, anchor: fits ? .start : .end)
        }
        for tick in layout.yTicks {
            let (_, y) = point(0, tick)
            image.line(from: (plot.left, y), to: (plot.right, y), RasterImage.Color(hex: "#e4e4e4"))
            image.text(
                Self.label(tick, step: layout.yMax / 5), x: plot.left - 8, y: y - 7, gray, scale: 2, anchor: .end)
        }
        for tick in layout.xTicks {
            let (x, _) = point(tick, 0)
            image.line(from: (x, offset + plot.bottom), to: (x, offset + plot.bottom + 5), axis)
            image.text(
                Self.label(tick, step: layout.xStep), x: x, y: offset + plot.bottom + 10, gray, scale: 2,
                anchor: .middle)
        }
        image.line(from: (plot.left, offset + plot.bottom), to: (plot.right, offset + plot.bottom), axis)
        image.line(from: (plot.left, offset + plot.top), to: (plot.left, offset + plot.bottom), axis)
        image.text(
            "time since the start (s)", x: (plot.left + plot.right) / 2, y: offset + height - 18, ink, scale: 2,
            anchor: .middle)
        image.text(unit, x: plot.left, y: offset + plot.top - 24, gray, scale: 2)
        // The title in bold: drawn twice, a pixel apart.
        for shift in [0.0, 1.0] { image.text(title, x: plot.left + shift, y: offset + 8, ink, scale: 2) }

        for bound in layout.bounds {
            let color = RasterImage.Color(hex: bound.color)
            let (_, y) = point(0, bound.value)
            image.line(from: (plot.left, y), to: (plot.right, y), color, dash: (3, 4))
            image.text(bound.name, x: plot.right - 4, y: y - 18, color, scale: 2, anchor: .end)
        }
        for line in lines {
            let color = RasterImage.Color(hex: line.color)
            var previous: (Double, Double)?
            for sample in line.points {
                guard let value = sample.y else {
                    previous = nil
                    continue
                }
                let here = point(sample.x, value)
                if let previous {
                    image.line(from: previous, to: here, color, thickness: 2, dash: line.dashed ? (7, 5) : nil)
                }
                previous = here
            }
            if line.points.count <= Self.maximumDots {
                for sample in line.points {
                    if let value = sample.y { image.dot(point(sample.x, value), radius: 3, color) }
                }
            }
        }
        // The legend, right under the title: a swatch and the name of each line.
        var x = plot.right - lines.reduce(0) { $0 + Double(RasterImage.textWidth($1.name, scale: 2) + 44) }
        for line in lines {
            let color = RasterImage.Color(hex: line.color)
            image.line(
                from: (x, offset + 37), to: (x + 22, offset + 37), color, thickness: 3,
                dash: line.dashed ? (7, 4) : nil)
            image.text(line.name, x: x + 28, y: offset + 30, ink, scale: 2)
            x += Double(RasterImage.textWidth(line.name, scale: 2) + 44)
        }
    }
}
