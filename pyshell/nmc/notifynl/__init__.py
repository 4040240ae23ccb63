"""NotifyNL's own rules as the NMC applies them before and after a call: its e-mail address
rule (notifynl_email) and its templates' placeholders (notifynl_templates). The calls
themselves are nmc.adapters.notifynl's."""
