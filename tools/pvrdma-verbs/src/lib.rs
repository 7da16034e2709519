//! Software verbs device (skeleton).
