/// One screenful: exactly `height` lines, each exactly `width` columns wide (see ``DisplayWidth/fit(_:_:)``).
public struct Frame: Hashable, Sendable {
    public var width: Int
    public var height: Int
    public var lines: [String]

    public init(width: Int, height: Int, lines: [String]) {
        self.width = width
        self.height = height
        var fitted = lines.prefix(height).map { DisplayWidth.fit($0, width) }
        while fitted.count < height { fitted.append(String(repeating: " ", count: max(0, width))) }
        self.lines = fitted
    }

    /// The lines (0-based) that differ from `previous`; every line when there is no previous frame or the size
    /// changed (after a resize the whole screen is redrawn).
    public func changedLines(since previous: Frame?) -> [Int] {
        guard let previous, previous.width == width, previous.height == height else { return Array(lines.indices) }
        return lines.indices.filter { lines[$0] != previous.lines[$0] }
    }

    /// The bytes that turn the screen showing `previous` into this frame: each changed line is rewritten in
    /// place (cursor addressed, no clearing, so nothing flickers); a full redraw after a resize clears first.
    public func output(since previous: Frame?) -> String {
        var out = ""
        if previous == nil || previous!.width != width || previous!.height != height { out += "\u{1B}[2J" }
        for line in changedLines(since: previous) {
            out += "\u{1B}[\(line + 1);1H" + lines[line]
        }
        return out
    }
}
