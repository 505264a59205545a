/// A key press, decoded from the terminal's bytes.
public enum Key: Hashable, Sendable {
    case character(Character)
    case up, down, left, right, home, end, pageUp, pageDown
    case enter, escape, backspace, delete, tab
    /// Ctrl with a letter (`ctrl("c")`).
    case ctrl(Character)
}

/// Turns raw terminal input (UTF-8 text and escape sequences) into keys; keeps an incomplete sequence for the
/// next read.
public struct KeyDecoder: Sendable {
    private var pending: [UInt8] = []

    public init() {}

    /// Keys in `bytes`; a lone ESC at the end is kept back unless `flush` (the read timed out with nothing after).
    public mutating func decode(_ bytes: [UInt8], flush: Bool = false) -> [Key] {
        pending += bytes
        var keys: [Key] = []
        var i = 0
        let b = pending
        while i < b.count {
            let byte = b[i]
            switch byte {
            case 0x1B:
                if i + 1 >= b.count {
                    if flush {
                        keys.append(.escape)
                        i += 1
                        continue
                    }
                    pending = Array(b[i...])
                    return keys
                }
                if b[i + 1] == UInt8(ascii: "[") || b[i + 1] == UInt8(ascii: "O") {
                    // CSI / SS3: parameters then a final byte in 0x40...0x7E.
                    var j = i + 2
                    while j < b.count, !(0x40...0x7E).contains(b[j]) { j += 1 }
                    if j >= b.count {
                        if flush {
                            keys.append(.escape)
                            i += 1
                            continue
                        }
                        pending = Array(b[i...])
                        return keys
                    }
                    let params = String(decoding: b[(i + 2)..<j], as: UTF8.self)
                    switch b[j] {
                    case UInt8(ascii: "A"): keys.append(.up)
                    case UInt8(ascii: "B"): keys.append(.down)
                    case UInt8(ascii: "C"): keys.append(.right)
                    case UInt8(ascii: "D"): keys.append(.left)
                    case UInt8(ascii: "H"): keys.append(.home)
                    case UInt8(ascii: "F"): keys.append(.end)
                    case UInt8(ascii: "~"):
                        switch params {
                        case "1", "7": keys.append(.home)
                        case "4", "8": keys.append(.end)
                        case "3": keys.append(.delete)
                        case "5": keys.append(.pageUp)
                        case "6": keys.append(.pageDown)
                        default: break
                        }
                    default: break
                    }
                    i = j + 1
                } else {
                    keys.append(.escape) // ESC then a key (Alt+key) reads as two keys
                    i += 1
                }
            case 0x0D, 0x0A:
                keys.append(.enter)
                i += 1
            case 0x7F, 0x08:
                keys.append(.backspace)
                i += 1
            case 0x09:
                keys.append(.tab)
                i += 1
            case 0x01...0x1A:
                keys.append(.ctrl(Character(Unicode.Scalar(byte + 0x60))))
                i += 1
            case 0x00, 0x1C...0x1F:
                i += 1
            default:
                // One UTF-8 scalar: its length from the lead byte; wait for the rest when incomplete.
                let length = byte < 0x80 ? 1 : byte >= 0xF0 ? 4 : byte >= 0xE0 ? 3 : byte >= 0xC0 ? 2 : 1
                if i + length > b.count {
                    pending = Array(b[i...])
                    return keys
                }
                let text = String(decoding: b[i..<(i + length)], as: UTF8.self)
                for scalar in text.unicodeScalars { keys.append(.character(Character(scalar))) }
                i += length
            }
        }
        pending = []
        return keys
    }
}
