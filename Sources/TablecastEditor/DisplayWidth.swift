/// Terminal display widths of text: wide (CJK, emoji) characters take two columns, combining marks and
/// other zero-width scalars take none, controls are never printed (they show as `?`).
public enum DisplayWidth {
    /// The columns `character` (a grapheme cluster: base plus combining marks, or an emoji sequence) takes.
    public static func of(_ character: Character) -> Int {
        let scalars = character.unicodeScalars
        guard let first = scalars.first else { return 0 }
        // Emoji shown as pictures: presentation by default, or asked for with VS16 (U+FE0F), or a ZWJ sequence.
        if first.properties.isEmojiPresentation { return 2 }
        if scalars.count > 1, first.properties.isEmoji,
            scalars.contains(where: {
                $0.value == 0xFE0F || $0.value == 0x200D || (0x1F3FB...0x1F3FF).contains($0.value)
            })
        {
            return 2
        }
        if scalars.count > 1, (0x1F1E6...0x1F1FF).contains(first.value) { return 2 } // flag
        return of(first)
    }

    /// The columns one scalar takes on its own.
    public static func of(_ scalar: Unicode.Scalar) -> Int {
        let value = scalar.value
        if value < 0x20 || (0x7F..<0xA0).contains(value) { return 1 } // shown as `?` by `sanitized`
        switch scalar.properties.generalCategory {
        case .nonspacingMark, .enclosingMark, .format: return 0
        default: break
        }
        if (0x1160...0x11FF).contains(value) || value == 0x200B { return 0 } // Hangul jamo medials, ZWSP
        return isWide(value) ? 2 : 1
    }

    /// East Asian Wide and Fullwidth ranges (UAX #11), plus the emoji blocks.
    static func isWide(_ v: UInt32) -> Bool {
        switch v {
        case 0x1100...0x115F, 0x231A...0x231B, 0x2329...0x232A, 0x23E9...0x23EC, 0x23F0, 0x23F3, 0x25FD...0x25FE,
            0x2614...0x2615, 0x2648...0x2653, 0x267F, 0x2693, 0x26A1, 0x26AA...0x26AB, 0x26BD...0x26BE,
            0x26C4...0x26C5, 0x26CE, 0x26D4, 0x26EA, 0x26F2...0x26F3, 0x26F5, 0x26FA, 0x26FD, 0x2705,
            0x270A...0x270B, 0x2728, 0x274C, 0x274E, 0x2753...0x2755, 0x2757, 0x2795...0x2797, 0x27B0, 0x27BF,
            0x2B1B...0x2B1C, 0x2B50, 0x2B55, 0x2E80...0x303E, 0x3041...0x33FF, 0x3400...0x4DBF, 0x4E00...0x9FFF,
            0xA000...0xA4CF, 0xA960...0xA97F, 0xAC00...0xD7A3, 0xF900...0xFAFF, 0xFE10...0xFE19, 0xFE30...0xFE6F,
            0xFF00...0xFF60, 0xFFE0...0xFFE6, 0x16FE0...0x18AFF, 0x1B000...0x1B2FF, 0x1F004, 0x1F0CF, 0x1F18E,
            0x1F191...0x1F19A, 0x1F200...0x1F251, 0x1F300...0x1F64F, 0x1F680...0x1F6FF, 0x1F7E0...0x1F7EB,
            0x1F90C...0x1F9FF, 0x1FA70...0x1FAFF, 0x20000...0x2FFFD, 0x30000...0x3FFFD:
            true
        default:
            false
        }
    }

    /// The columns `text` takes.
    public static func of(_ text: String) -> Int {
        text.reduce(0) { $0 + of($1) }
    }

    /// `text` with control characters (newlines, tabs, escapes) replaced by `?`, so a value never moves the
    /// terminal's cursor.
    public static func sanitized(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: { $0.value < 0x20 || (0x7F..<0xA0).contains($0.value) }) else {
            return text
        }
        return String(
            String.UnicodeScalarView(
                text.unicodeScalars.map { $0.value < 0x20 || (0x7F..<0xA0).contains($0.value) ? "?" : $0 }))
    }

    /// `text` cut to at most `width` columns (ending in `…` when cut), never splitting a character, then padded
    /// with spaces to exactly `width` columns (a wide character that would straddle the edge becomes a space).
    public static func fit(_ text: String, _ width: Int) -> String {
        guard width > 0 else { return "" }
        let text = sanitized(text)
        let total = of(text)
        if total <= width { return text + String(repeating: " ", count: width - total) }
        var out = ""
        var used = 0
        for character in text {
            let w = of(character)
            if used + w > width - 1 { break }
            out.append(character)
            used += w
        }
        out.append("…")
        used += 1
        return out + String(repeating: " ", count: max(0, width - used))
    }
}
