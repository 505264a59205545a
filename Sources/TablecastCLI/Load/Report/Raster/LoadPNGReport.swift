import Foundation

/// `tablecast load --report FILE.png`: the HTML report's verdict, thresholds and charts as one picture, drawn
/// without a browser (pixels in Swift, zlib's deflate), for a CI page or a chat message that shows images only.
struct LoadPNGReport {
    let page: LoadHTMLReport

    static let width = 1000
    private static let margin = 40
    private static let chartHeight = 320
    /// Characters of pixel text (twice the font's size) on a line.
    private static var lineCharacters: Int { (width - 2 * margin) / (BitmapFont.advance * 2) }

    var png: Data {
        let verdict = page.verdict
        let verdictLines = Self.wrap(verdict.text)
        let thresholds = page.verdicts.map { verdict in
            (
                (verdict.result.holds ? "✔ ok     " : "✘ FAILED ") + verdict.threshold.description + "  ("
                    + LoadHTMLReport.valueText(verdict) + ")", verdict.result.holds
            )
        }
        let charts = page.charts.map { chart -> SVGChart in
            var chart = chart
            chart.width = Double(Self.width - 2 * Self.margin)
            chart.height = Double(Self.chartHeight)
            return chart
        }
        var server = "unknown"
        if case .object(let members)? = page.find("server"), case .string(let name)? = members["name"],
            case .string(let version)? = members["version"]
        {
            server = "\(name) \(version)"
        }
        let settings = Self.wrap(page.command.joined(separator: " "))

        let lineHeight = 22
        var height = Self.margin + 36 + 2 * lineHeight + 16 + verdictLines.count * lineHeight + 24
        height += (thresholds.isEmpty ? 0 : lineHeight + thresholds.count * lineHeight) + 16
        height += charts.count * (Self.chartHeight + 16) + settings.count * lineHeight + Self.margin

        var image = RasterImage(width: Self.width, height: height)
        let ink = RasterImage.Color(hex: "#1d1d1f")
        let gray = RasterImage.Color(hex: "#555555")
        let left = Double(Self.margin)
        var y = Self.margin
        var url = ""
        if case .string(let text)? = page.find("settings", "url") { url = text }
        for shift in [0.0, 1.0] { image.text("Load test of \(url)", x: left + shift, y: Double(y), ink, scale: 4) }
        y += 40
        image.text(
            "Server \(server) · tablecast load \(TablecastVersion.current)", x: left, y: Double(y), gray, scale: 2)
        y += lineHeight + 16
        let band = verdictLines.count * lineHeight + 12
        image.fill(
            x: Self.margin, y: y - 6, width: Self.width - 2 * Self.margin, height: band,
            RasterImage.Color(hex: verdict.ok ? "#e6f4ea" : "#fdecea"))
        for line in verdictLines {
            let color = RasterImage.Color(hex: verdict.ok ? "#1e5e2b" : "#a11d1d")
            for shift in [0.0, 1.0] { image.text(line, x: left + 10 + shift, y: Double(y), color, scale: 2) }
            y += lineHeight
        }
        y += 24
        if !thresholds.isEmpty {
            for shift in [0.0, 1.0] { image.text("Thresholds", x: left + shift, y: Double(y), ink, scale: 2) }
            y += lineHeight
            for (text, holds) in thresholds {
                image.text(
                    text, x: left, y: Double(y), RasterImage.Color(hex: holds ? "#1e7b34" : "#b71c1c"), scale: 2)
                y += lineHeight
            }
        }
        y += 16
        for chart in charts {
            chart.draw(into: &image, left: Self.margin, top: y)
            y += Self.chartHeight + 16
        }
        for line in settings {
            image.text(line, x: left, y: Double(y), gray, scale: 2)
            y += lineHeight
        }
        return image.png
    }

    /// Lines of at most `lineCharacters` characters, broken at spaces where there are any.
    private static func wrap(_ text: String) -> [String] {
        var lines: [String] = []
        var current = ""
        for word in text.split(separator: " ") {
            var word = String(word)
            while word.count > lineCharacters {
                if !current.isEmpty { lines.append(current) }
                current = ""
                lines.append(String(word.prefix(lineCharacters)))
                word = String(word.dropFirst(lineCharacters))
            }
            if current.isEmpty {
                current = word
            } else if current.count + 1 + word.count <= lineCharacters {
                current += " " + word
            } else {
                lines.append(current)
                current = word
            }
        }
        if !current.isEmpty { lines.append(current) }
        return lines
    }
}
