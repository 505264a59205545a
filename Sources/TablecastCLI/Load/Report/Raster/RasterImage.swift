import CZlib
import Foundation

/// An RGB picture drawn pixel by pixel, for the PNG report: rectangles, lines, dots and text in `BitmapFont`, and
/// the PNG file (zlib's deflate).
struct RasterImage {
    struct Color: Equatable {
        var red: UInt8
        var green: UInt8
        var blue: UInt8

        /// `#rrggbb` or `#rgb`.
        init(hex: String) {
            let digits = hex.dropFirst()
            let full = digits.count == 3 ? String(digits.flatMap { [$0, $0] }) : String(digits)
            let value = UInt32(full, radix: 16) ?? 0
            (red, green, blue) = (UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF))
        }

        static let white = Color(hex: "#ffffff")
    }

    enum Anchor { case start, middle, end }

    let width: Int
    let height: Int
    private(set) var pixels: [UInt8]

    init(width: Int, height: Int, background: Color = .white) {
        self.width = width
        self.height = height
        pixels = [UInt8](repeating: 0, count: width * height * 3)
        fill(x: 0, y: 0, width: width, height: height, background)
    }

    mutating func set(_ x: Int, _ y: Int, _ color: Color) {
        guard x >= 0, y >= 0, x < width, y < height else { return }
        let index = (y * width + x) * 3
        pixels[index] = color.red
        pixels[index + 1] = color.green
        pixels[index + 2] = color.blue
    }

    mutating func fill(x: Int, y: Int, width: Int, height: Int, _ color: Color) {
        for row in max(0, y)..<min(self.height, y + height) {
            for column in max(0, x)..<min(self.width, x + width) { set(column, row, color) }
        }
    }

    /// A line `thickness` pixels wide; `dash` (on, off) in pixels along it.
    mutating func line(
        from start: (Double, Double), to end: (Double, Double), _ color: Color, thickness: Int = 1,
        dash: (Int, Int)? = nil
    ) {
        let steps = max(1, Int(max(abs(end.0 - start.0), abs(end.1 - start.1)).rounded(.up)))
        for step in 0...steps {
            if let dash, step % (dash.0 + dash.1) >= dash.0 { continue }
            let t = Double(step) / Double(steps)
            let x = Int((start.0 + (end.0 - start.0) * t).rounded()) - (thickness - 1) / 2
            let y = Int((start.1 + (end.1 - start.1) * t).rounded()) - (thickness - 1) / 2
            fill(x: x, y: y, width: thickness, height: thickness, color)
        }
    }

    mutating func dot(_ center: (Double, Double), radius: Double, _ color: Color) {
        let (cx, cy) = center
        for y in Int(cy - radius)...Int(cy + radius) {
            for x in Int(cx - radius)...Int(cx + radius) {
                let (dx, dy) = (Double(x) - cx, Double(y) - cy)
                if dx * dx + dy * dy <= radius * radius + 0.5 { set(x, y, color) }
            }
        }
    }

    /// Text whose top is at `y`, `scale` pixels per font pixel.
    mutating func text(_ text: String, x: Double, y: Double, _ color: Color, scale: Int = 1, anchor: Anchor = .start) {
        let width = Double(Self.textWidth(text, scale: scale))
        var left = Int(
            (anchor == .start ? x : anchor == .middle ? x - width / 2 : x - width).rounded())
        for character in text {
            for (row, bits) in BitmapFont.glyph(character).enumerated() {
                for (column, on) in bits.enumerated() where on {
                    fill(x: left + column * scale, y: Int(y) + row * scale, width: scale, height: scale, color)
                }
            }
            left += BitmapFont.advance * scale
        }
    }

    static func textWidth(_ text: String, scale: Int = 1) -> Int {
        max(0, text.count * BitmapFont.advance - 1) * scale
    }

    /// The picture as a PNG file: 8-bit RGB, each row filtered with "Up" (equal rows become zeros), deflated.
    var png: Data {
        var raw = [UInt8]()
        raw.reserveCapacity((width * 3 + 1) * height)
        let stride = width * 3
        for row in 0..<height {
            raw.append(2) // Up: each byte minus the one above it
            for index in row * stride..<(row + 1) * stride {
                raw.append(pixels[index] &- (row > 0 ? pixels[index - stride] : 0))
            }
        }
        var size = compressBound(uLong(raw.count))
        var compressed = [UInt8](repeating: 0, count: Int(size))
        let status = compress2(&compressed, &size, raw, uLong(raw.count), Z_BEST_COMPRESSION)
        precondition(status == Z_OK, "deflate failed: \(status)")
        var header = [UInt8]()
        for value in [UInt32(width), UInt32(height)] { header += Self.bigEndian(value) }
        header += [8, 2, 0, 0, 0] // 8 bits, RGB, deflate, adaptive filtering, no interlace
        var file: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        file += Self.chunk("IHDR", header)
        file += Self.chunk("IDAT", Array(compressed[..<Int(size)]))
        file += Self.chunk("IEND", [])
        return Data(file)
    }

    private static func bigEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }

    private static func chunk(_ kind: String, _ data: [UInt8]) -> [UInt8] {
        let body = Array(kind.utf8) + data
        let crc = body.withUnsafeBufferPointer { crc32(0, $0.baseAddress, uInt($0.count)) }
        return bigEndian(UInt32(data.count)) + body + bigEndian(UInt32(crc))
    }
}
