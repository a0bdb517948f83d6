def audit(*a, **k): raise NotImplementedError
class Audit: pass
