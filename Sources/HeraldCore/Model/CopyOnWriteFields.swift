/// A value type's fields kept in one class instance that copies share (copy on write): a copy
/// is one retain instead of one per string field, and equal copies compare at once by identity.
/// `DeviceRecord`, `PushNotification` and `NotificationRecord` keep theirs so (issue 17: each is copied several times
/// a push). The owner reads through its box freely and changes it only after `uniqueFields`.
protocol CopyOnWriteFields: AnyObject {
    /// A new box with the same fields (for a change to a shared box).
    func copy() -> Self
    /// Whether every field equals `other`'s.
    func equals(_ other: Self) -> Bool
}

/// `fields`, first replaced by its copy when another value shares it: the box to change.
@inline(__always)
func uniqueFields<Fields: CopyOnWriteFields>(_ fields: inout Fields) -> Fields {
    if !isKnownUniquelyReferenced(&fields) { fields = fields.copy() }
    return fields
}

/// Value equality of two owners' boxes: at once when they share one, else field by field.
@inline(__always)
func sameFields<Fields: CopyOnWriteFields>(_ lhs: Fields, _ rhs: Fields) -> Bool {
    lhs === rhs || lhs.equals(rhs)
}
