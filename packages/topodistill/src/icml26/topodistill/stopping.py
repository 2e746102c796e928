"""When to stop training: the house rule :class:`icml26.shared.Plateau`.

Every network of the package (the teacher and each student) stops by it, measured on the
training block only: one epoch of the teacher, or ``window`` minibatches of a student, is one
window of the monitored KL.
"""

from icml26.shared import Plateau

__all__ = ["Plateau"]
