/// A value bound to a statement parameter or read from a result column, in SQLite's five storage classes.
package enum SQLiteValue: Sendable, Hashable {
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])
    case null

    /// Text, or NULL when absent.
    package init(_ text: String?) {
        self = text.map(SQLiteValue.text) ?? .null
    }

    /// The UTF-8 length of text, 0 for any other value.
    var textByteCount: Int {
        guard case .text(let text) = self else { return 0 }
        return text.utf8.count
    }
}

extension SQLiteValue: ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral, ExpressibleByStringLiteral,
    ExpressibleByNilLiteral
{
    package init(integerLiteral value: Int64) { self = .integer(value) }
    package init(floatLiteral value: Double) { self = .real(value) }
    package init(stringLiteral value: String) { self = .text(value) }
    package init(nilLiteral: ()) { self = .null }
}
